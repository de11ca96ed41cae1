"""Damaged input of every kind comes back as Rejected or as pages, never as an exception."""

from __future__ import annotations

import random

import pytest
from PIL import Image

from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import ReadDocument
from docflow.extraction.ocr import FakeOcrEngine
from docflow.extraction.readers import read_document

LIMITS = EngineLimits(dpi=50)  # damaged pages may lose their text and be rendered: keep it cheap


@pytest.fixture
def originals(text_pdf, image_bytes, page_image) -> dict[str, bytes]:
    page = page_image([(20, 20, "Total 12.50")], size=(240, 120), font_px=18)
    return {
        "pdf": text_pdf([[(72, 72, "Invoice 2026-001 total 12.50")], [(72, 72, "Page two")]]),
        "png": image_bytes([page], "PNG"),
        "jpeg": image_bytes([page], "JPEG"),
        "tiff": image_bytes([page, page], "TIFF", compression="tiff_lzw"),
        "cmyk-jpeg": image_bytes([page.convert("CMYK")], "JPEG"),
        "palette-png": image_bytes([page.convert("P")], "PNG"),
        "bilevel-tiff": image_bytes([page.convert("1")], "TIFF", compression="group4"),
    }


def mutations(data: bytes, seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        damaged = bytearray(data)
        how = rng.choice(["flip", "truncate", "splice"])
        if how == "flip":
            for _ in range(rng.randint(1, 20)):
                damaged[rng.randrange(8, len(damaged))] = rng.randrange(256)
        elif how == "truncate":
            del damaged[rng.randrange(16, len(damaged)) :]
        else:
            start = rng.randrange(16, len(damaged))
            damaged[start:start] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 400)))
        out.append(bytes(damaged))
    return out


def test_undamaged_originals_are_read(originals) -> None:
    for data in originals.values():
        assert isinstance(read_document(data, ocr=FakeOcrEngine(), limits=LIMITS), ReadDocument)


@pytest.mark.filterwarnings("ignore::UserWarning")  # Pillow on damaged TIFF metadata
@pytest.mark.parametrize(
    "name", ["pdf", "png", "jpeg", "tiff", "cmyk-jpeg", "palette-png", "bilevel-tiff"]
)
def test_damaged_files_never_raise(originals, name) -> None:
    codes = set()
    for data in mutations(originals[name], seed=len(name), count=40):
        result = read_document(data, ocr=FakeOcrEngine(), limits=LIMITS)
        if isinstance(result, Rejected):
            assert result.reason
            codes.add(result.code)
        else:
            assert isinstance(result, ReadDocument) and result.pages
    assert codes <= {RejectCode.CORRUPT_FILE, RejectCode.IMAGE_TOO_LARGE}


def test_image_modes_reach_the_engine_as_grayscale(originals) -> None:
    class Recording(FakeOcrEngine):
        def recognize(self, image: Image.Image, *, timeout_s: float) -> list:
            self.modes.append(image.mode)
            return super().recognize(image, timeout_s=timeout_s)

    for name in ("cmyk-jpeg", "palette-png", "bilevel-tiff"):
        engine = Recording()
        engine.modes = []
        assert isinstance(read_document(originals[name], ocr=engine), ReadDocument)
        assert engine.modes == ["L"]


@pytest.mark.parametrize(
    "bad",
    [
        {"max_pages": 0},
        {"max_pixels": 0},
        {"ocr_seconds_per_page": 0},
        {"dpi": 20},
        {"dpi": 5000},
        {"min_text_chars": -1},
    ],
)
def test_limits_refuse_nonsense(bad) -> None:
    with pytest.raises(ValueError):
        EngineLimits(**bad)
