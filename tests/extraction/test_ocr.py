from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PIL import Image

from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import ReadDocument, Rect, TextSource, Word
from docflow.extraction.ocr import (
    FakeOcrEngine,
    OcrEngine,
    OcrError,
    OcrTimeout,
    TesseractCliEngine,
    TesserocrEngine,
    default_engine,
)
from docflow.extraction.ocr.cli_engine import parse_tsv
from docflow.extraction.readers import read_document
from support.ocr_threads import read_from_threads

LINES = [(100, 120, "Invoice Number 48213"), (100, 400, "Total Amount 1,234.56")]


def test_fake_engine_returns_its_words_and_counts_calls() -> None:
    word = Word("hello", Rect(0.1, 0.1, 0.2, 0.2), 0.5, 0, 0)
    engine = FakeOcrEngine([word])
    assert isinstance(engine, OcrEngine)
    image = Image.new("L", (10, 20))
    assert engine.recognize(image, timeout_s=1) == [word]
    assert engine.recognize(image, timeout_s=1) == [word]
    assert engine.calls == 2 and engine.sizes == [(10, 20), (10, 20)]
    with pytest.raises(OcrTimeout):
        FakeOcrEngine(timeout=True).recognize(image, timeout_s=2)


def test_fake_engine_from_lines_lays_words_out_top_to_bottom() -> None:
    words = FakeOcrEngine.from_lines(["Invoice No 12", "Total 3.50"]).words
    assert [w.text for w in words] == ["Invoice", "No", "12", "Total", "3.50"]
    assert [w.line for w in words] == [0, 0, 0, 1, 1]
    assert words[0].box.x1 < words[1].box.x0 and words[2].box.y1 < words[3].box.y0


def test_parse_tsv_numbers_lines_and_blocks_within_the_page() -> None:
    columns = "level page_num block_num par_num line_num word_num left top width height conf text"
    header = columns.replace(" ", "\t")
    rows = [
        "1\t1\t0\t0\t0\t0\t0\t0\t200\t100\t-1\t",
        "5\t1\t1\t1\t1\t1\t10\t10\t40\t10\t96.5\tTotal",
        "5\t1\t1\t1\t1\t2\t60\t10\t40\t10\t91\t12.50",
        "5\t1\t1\t1\t2\t1\t10\t30\t40\t10\t80\tnext",
        "5\t1\t2\t1\t1\t1\t10\t60\t40\t10\t70\t ",
        "5\t1\t2\t1\t1\t2\t10\t60\t40\t10\t70\tthird",
    ]
    words = parse_tsv("\n".join([header, *rows]), 200, 100)
    assert [(w.text, w.line, w.block) for w in words] == [
        ("Total", 0, 0),
        ("12.50", 0, 0),
        ("next", 1, 0),
        ("third", 2, 1),
    ]
    assert words[0].box == Rect(0.05, 0.1, 0.25, 0.2)
    assert words[0].confidence == pytest.approx(0.965)


def test_importing_the_ocr_package_does_not_load_tesseract() -> None:
    code = (
        "import sys, os; import docflow.extraction.ocr, docflow.extraction.readers; "
        "print('tesserocr' in sys.modules, os.environ.get('OMP_THREAD_LIMIT'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.split() == ["False", "None"]


@pytest.fixture(scope="module")
def engine() -> TesserocrEngine:
    return default_engine()


def check_recognised(words: list[Word], size: tuple[int, int]) -> None:
    texts = [w.text for w in words]
    assert texts == ["Invoice", "Number", "48213", "Total", "Amount", "1,234.56"]
    invoice, number = words[0], words[2]
    assert invoice.box.x0 == pytest.approx(100 / size[0], abs=0.01)
    assert invoice.box.y0 == pytest.approx(130 / size[1], abs=0.01)
    assert number.box.x0 > invoice.box.x1
    assert words[3].box.y0 == pytest.approx(410 / size[1], abs=0.01)
    assert words[0].line == words[2].line != words[3].line
    assert all(0 <= w.confidence <= 1 for w in words)
    # Tesseract now and then gives a correctly read word a very low confidence.
    assert sorted(w.confidence for w in words)[len(words) // 2] > 0.8


@pytest.mark.tesseract
def test_tesserocr_reads_words_and_boxes(engine, page_image) -> None:
    assert os.environ["OMP_THREAD_LIMIT"] == "1"
    image = page_image(LINES, size=(1200, 600))
    check_recognised(engine.recognize(image, timeout_s=30), image.size)


@pytest.mark.tesseract
def test_tesseract_cli_reads_the_same(page_image) -> None:
    image = page_image(LINES, size=(1200, 600))
    check_recognised(TesseractCliEngine().recognize(image, timeout_s=30), image.size)


@pytest.mark.tesseract
def test_tesserocr_engines_are_pooled_across_threads(engine, page_image) -> None:
    image = page_image(LINES, size=(1200, 600))
    results = read_from_threads(engine, image, threads=3, timeout_s=30)
    assert len(results) == 3 and all(r == results[0] for r in results)
    assert 2 <= engine.pool_size <= 4


@pytest.mark.tesseract
def test_the_production_engine_does_not_reread_words_inverted() -> None:
    production = default_engine(max_engines=1)
    assert production.variables == {"tessedit_do_invert": "0"}
    with production._pool.borrow() as api:
        assert api.GetVariableAsString("tessedit_do_invert") == "0"
    production.close()


@pytest.mark.tesseract
def test_tesserocr_engines_are_capped_and_threads_past_the_cap_wait(page_image) -> None:
    capped = default_engine(max_engines=1)
    image = page_image(LINES, size=(1200, 600))
    results = read_from_threads(capped, image, threads=4, timeout_s=30)
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert capped.pool_size == 1  # one engine served all four threads, one at a time
    capped.close()


@pytest.mark.tesseract
def test_tesserocr_timeout(engine, page_image) -> None:
    image = page_image([(50, 50 + 45 * n, "lorem ipsum dolor sit amet " * 2) for n in range(36)])
    with pytest.raises(OcrTimeout):
        engine.recognize(image, timeout_s=0.005)
    assert engine.recognize(Image.new("L", (50, 50), "white"), timeout_s=10) == []


@pytest.mark.tesseract
def test_read_document_reports_a_real_ocr_timeout(engine, page_image, image_bytes) -> None:
    image = page_image([(50, 50 + 45 * n, "lorem ipsum dolor sit amet " * 2) for n in range(36)])
    data = image_bytes([image], "PNG")
    result = read_document(data, ocr=engine, limits=EngineLimits(ocr_seconds_per_page=0.005))
    assert isinstance(result, Rejected) and result.code == RejectCode.OCR_TIMEOUT


@pytest.mark.tesseract
def test_scanned_pdf_through_real_ocr(engine, page_image, image_bytes) -> None:
    image = page_image(LINES, size=(1700, 2200), font_px=44)
    data = image_bytes([image], "PDF", resolution=200.0)
    document = read_document(data, ocr=engine)
    assert isinstance(document, ReadDocument)
    page = document.pages[0]
    assert page.source == TextSource.OCR
    assert [w.text for w in page.words][:3] == ["Invoice", "Number", "48213"]
    assert page.words[0].box.x0 == pytest.approx(100 / 1700, abs=0.01)


@pytest.mark.tesseract
def test_orientation_detection_turns_the_page_upright(engine, page_image, image_bytes) -> None:
    lines = [(80, 100 + 60 * n, f"Line {n} of a sideways scanned letter") for n in range(12)]
    upright = page_image(lines, size=(1400, 1000))
    data = image_bytes([upright.rotate(90, expand=True)], "PNG")
    limits = EngineLimits(detect_orientation=True)
    document = read_document(data, ocr=engine, limits=limits)
    assert isinstance(document, ReadDocument)
    page = document.pages[0]
    assert (page.width, page.height) == (1400, 1000)
    assert [w.text for w in page.words][:3] == ["Line", "0", "of"]


def test_bad_tessdata_is_an_ocr_error(tmp_path) -> None:
    with pytest.raises(OcrError):
        TesserocrEngine(datapath=str(tmp_path), lang="eng")


@pytest.mark.tesseract
def test_tesseract_cli_timeout(page_image) -> None:
    image = page_image([(50, 50 + 45 * n, "lorem ipsum dolor sit amet " * 2) for n in range(36)])
    with pytest.raises(OcrTimeout):
        TesseractCliEngine().recognize(image, timeout_s=0.01)


def test_missing_tesseract_program_is_an_ocr_error() -> None:
    with pytest.raises(OcrError):
        TesseractCliEngine(binary="tesseract-not-installed-here")
