from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from PIL import Image

from docflow.extraction.errors import Rejected
from docflow.extraction.model import Rect, Word
from docflow.extraction.ocr import default_engine
from docflow.extraction.preprocess import (
    Prepared,
    PreprocessOptions,
    crop_to_print,
    normalise_background,
    prepare,
    skew_angle,
    to_gray,
    upscale_factor,
)
from docflow.extraction.readers import read_document

TEXT = [(60, 60 + 40 * n, f"Item {n} coffee beans 250g  RM 12.{n}0") for n in range(12)]


def test_transparent_image_is_flattened_on_white() -> None:
    image = Image.new("RGBA", (20, 10), (0, 0, 0, 0))
    image.putpixel((3, 3), (0, 0, 0, 255))
    gray = to_gray(image)
    assert gray.mode == "L"
    assert gray.getpixel((0, 0)) == 255 and gray.getpixel((3, 3)) == 0


def test_sixteen_bit_image_is_scaled_to_eight_bits() -> None:
    image = Image.fromarray(np.array([[0, 1000], [2000, 4000]], dtype=np.uint16))
    assert np.asarray(to_gray(image)).tolist() == [[0, 63], [127, 255]]


def test_small_text_is_upscaled_and_large_text_is_not(page_image) -> None:
    options = PreprocessOptions()
    small = np.asarray(page_image(TEXT, size=(700, 560), font_px=14))
    large = np.asarray(page_image(TEXT[:4], size=(2000, 600), font_px=60))
    assert upscale_factor(small, options) > 1.5
    assert upscale_factor(large, options) == 1.0
    prepared = prepare(Image.fromarray(small), PreprocessOptions(crop=False))
    assert prepared.image.width == round(700 * prepared.scale)


def test_upscaling_respects_the_pixel_budget(page_image) -> None:
    options = PreprocessOptions(max_pixels=1_000_000)
    small = np.asarray(page_image(TEXT, size=(700, 560), font_px=14))
    factor = upscale_factor(small, options)
    assert 700 * 560 * factor * factor <= 1_000_000 * 1.0001


@pytest.mark.parametrize("degrees", [-2.0, 1.5])
def test_skew_is_measured(page_image, degrees) -> None:
    turned = page_image(TEXT, size=(900, 600), font_px=22).rotate(degrees, fillcolor=255)
    # Undoing a counter-clockwise turn takes a clockwise one.
    assert skew_angle(np.asarray(turned), 3.0) == pytest.approx(-degrees, abs=0.3)


def test_straight_and_blank_pages_are_left_alone(page_image) -> None:
    assert skew_angle(np.asarray(page_image(TEXT, size=(900, 600), font_px=22)), 3.0) == 0.0
    assert skew_angle(np.full((500, 400), 255, dtype=np.uint8), 3.0) == 0.0


def test_boxes_on_a_deskewed_image_map_back_to_the_original() -> None:
    width, height, angle = 1000, 800, 2.0
    prepared = Prepared(Image.new("L", (width, height)), 1.0, angle)
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)
    for x, y in [(100, 100), (900, 700), (500, 400), (850, 120)]:
        px, py = matrix @ np.array([x, y, 1.0])
        box = Rect((px - 3) / width, (py - 3) / height, (px + 3) / width, (py + 3) / height)
        back = prepared.to_original(box)
        assert back.cx == pytest.approx(x / width, abs=1e-6)
        assert back.cy == pytest.approx(y / height, abs=1e-6)
        assert back.width < 9 / width


def test_blank_margins_are_cut_before_reading(page_image) -> None:
    page = page_image([(700, 900, "TOTAL 48.60"), (700, 950, "PAID 50.00")], font_px=30)
    speck = np.asarray(page).copy()
    speck[100, 100] = 0  # one dot of scanner noise in the margin
    cut, area = crop_to_print(speck, padding=20)
    assert cut.shape[0] < 200 and cut.shape[1] < 400  # only the two lines and the padding
    assert area.x0 == pytest.approx((700 - 20) / 1240, abs=0.01)
    assert area.y0 == pytest.approx((900 - 20) / 1754, abs=0.01)
    whole, everything = crop_to_print(np.full((300, 200), 255, dtype=np.uint8), padding=20)
    assert whole.shape == (300, 200) and everything == Rect(0.0, 0.0, 1.0, 1.0)


def test_boxes_on_a_cut_image_map_back_to_the_original() -> None:
    area = Rect(0.25, 0.5, 0.75, 1.0)
    prepared = Prepared(Image.new("L", (500, 400)), 2.0, 0.0, area)
    back = prepared.to_original(Rect(0.0, 0.5, 0.5, 1.0))
    assert (back.x0, back.y0, back.x1, back.y1) == pytest.approx((0.25, 0.75, 0.5, 1.0))


def test_background_normalisation_flattens_uneven_paper(page_image) -> None:
    text = np.asarray(page_image(TEXT, size=(900, 600), font_px=22), dtype=np.float64)
    shade = np.linspace(120, 235, 900)[None, :]  # paper darkening towards the left
    faded = (shade - (255 - text) * 0.35).clip(0, 255).astype(np.uint8)
    flat = normalise_background(faded)
    paper = text == 255
    assert np.percentile(flat[paper], 5) > 200  # the whole sheet is light now
    assert flat[~paper].mean() < flat[paper].mean() - 60


@pytest.mark.tesseract
def test_faded_small_skewed_receipt_is_read(page_image, image_bytes) -> None:
    lines = [(40, 40, "TOTAL RM 48.60"), (40, 80, "DATE 14/03/2026"), *TEXT[:6]]
    clean = np.asarray(page_image(lines, size=(560, 420), font_px=13), dtype=np.float64)
    shade = np.linspace(150, 240, 560)[None, :]
    faded = Image.fromarray((shade - (255 - clean) * 0.4).clip(0, 255).astype(np.uint8))
    data = image_bytes([faded.rotate(1.5, fillcolor=200)], "JPEG", quality=85)
    document = read_document(data, ocr=default_engine())
    assert not isinstance(document, Rejected)
    text = " ".join(w.text for w in document.pages[0].words)
    assert "48.60" in text and "14/03/2026" in text
    total = next(w for w in document.pages[0].words if w.text == "48.60")
    # The box is on the original image, whatever was scaled and turned to read it.
    assert total.box.y0 < 60 / 420 < total.box.y1 + 0.02
    assert math.isclose(total.box.cx, (40 + 100) / 560, abs_tol=0.1)


@pytest.mark.tesseract
def test_words_in_the_middle_of_a_wide_page_keep_their_place(page_image) -> None:
    lines = [(600, 800, "INVOICE TOTAL 1234.50"), (600, 840, "DUE 14/03/2026")]
    page = page_image(lines, size=(1700, 2200), font_px=16)
    prepared = prepare(page, PreprocessOptions(crop=True))
    assert prepared.scale > 1.0 and prepared.image.width < 1700
    words = default_engine().recognize(prepared.image, timeout_s=30)
    total = next(w for w in words if w.text == "1234.50")
    total = Word(total.text, prepared.to_original(total.box), total.confidence, 0, 0)
    # Read from the cut, enlarged print; the box is on the whole page.
    assert total.box.y0 < 808 / 2200 < total.box.y1
    assert 600 / 1700 < total.box.x0 < total.box.x1 < 900 / 1700
