"""PP-OCR on ONNX Runtime, the second OCR tier: real models on generated pages."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from docflow.corpus.generate import generate_corpus
from docflow.extraction.definition import ReadingPolicy
from docflow.extraction.ocr import FakeOcrEngine, OcrEngine, PpOcrEngine, ppocr_engine
from docflow.extraction.ocr.ppocr_engine import line_words
from docflow.extraction.pipeline import extract_document
from docflow.extraction.result import ExtractionResult
from docflow.extraction.workflow_file import load_workflow_file
from support.ocr_threads import read_from_threads

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LINES = [(100, 120, "Invoice Number 48213"), (100, 400, "Total Amount 1,234.56")]


def test_lines_are_split_into_words_with_proportional_boxes() -> None:
    square = [[100, 50], [300, 50], [300, 70], [100, 70]]
    lower = [[100, 150], [140, 150], [140, 170], [100, 170]]
    words = line_words([(lower, "Next", 0.5), (square, "Total  9.90", 0.97)], 1000, 200)
    assert [(w.text, w.line, w.block) for w in words] == [
        ("Total", 0, 0),
        ("9.90", 0, 0),
        ("Next", 1, 0),
    ]
    # 11 characters over 200 pixels: "Total" takes the first five, "9.90" the last four.
    box = words[0].box
    assert (box.x0, box.y0, box.x1, box.y1) == pytest.approx((0.1, 0.25, 0.1 + 5 / 11 * 0.2, 0.35))
    assert words[1].box.x0 == pytest.approx(0.1 + 7 / 11 * 0.2)
    assert words[1].box.x1 == pytest.approx(0.3)
    assert words[0].confidence == 0.97 and words[2].confidence == 0.5


def test_full_width_forms_are_read_as_their_ascii_forms() -> None:
    box = [[0, 0], [200, 0], [200, 20], [0, 20]]
    words = line_words([(box, "MR.D.I.Y.（KUCHAI)\u3000Total：１２.５０", 0.9)], 400, 100)
    assert [w.text for w in words] == ["MR.D.I.Y.(KUCHAI)", "Total:12.50"]


def test_importing_the_engine_loads_no_model() -> None:
    engine = ppocr_engine(max_engines=1)
    assert isinstance(engine, OcrEngine)
    assert engine._model is None


@pytest.fixture(scope="module")
def engine() -> PpOcrEngine:
    return ppocr_engine(max_engines=2)


@pytest.mark.ppocr
def test_ppocr_reads_words_and_boxes(engine, page_image) -> None:
    size = (1200, 600)
    words = engine.recognize(page_image(LINES, size=size), timeout_s=60)
    assert [w.text for w in words] == ["Invoice", "Number", "48213", "Total", "Amount", "1,234.56"]
    invoice, number, total = words[0], words[2], words[3]
    assert invoice.box.x0 == pytest.approx(100 / size[0], abs=0.02)
    assert invoice.box.y0 == pytest.approx(130 / size[1], abs=0.03)
    assert number.box.x0 > words[1].box.x1 > invoice.box.x1
    assert total.box.y0 == pytest.approx(410 / size[1], abs=0.03)
    assert invoice.line == number.line != total.line
    assert all(0.8 < w.confidence <= 1 for w in words)


@pytest.mark.ppocr
def test_recognition_leaves_the_interpreter_to_other_threads(engine, page_image) -> None:
    """While a page is recognised, a pure-Python thread keeps counting: ONNX Runtime computes
    outside the interpreter lock."""
    image = page_image(LINES, size=(1200, 600))
    engine.recognize(image, timeout_s=60)  # loaded
    done = threading.Event()
    ticks = 0

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    started = time.perf_counter()
    counter = threading.Thread(target=count)
    counter.start()
    try:
        engine.recognize(image, timeout_s=60)
    finally:
        done.set()
        counter.join()
    took = time.perf_counter() - started
    # A thread holding the lock for the whole page would leave the counter a few switch
    # intervals (5 ms each); free, it counts millions of times a second.
    assert ticks > 50_000 * took


@pytest.mark.ppocr
def test_one_model_set_serves_threads_at_most_max_engines_at_once(page_image) -> None:
    capped = ppocr_engine(max_engines=1)
    image = page_image(LINES, size=(1200, 600))
    results = read_from_threads(capped, image, threads=3, timeout_s=60)
    assert len(results) == 3 and all(r == results[0] for r in results)
    model = capped._model
    assert model is not None and capped.load() is model  # loaded once, shared
    assert capped._slots is not None and capped._slots._value == 1  # type: ignore[attr-defined]


@pytest.mark.ppocr
def test_accurate_reading_extracts_a_generated_scan_with_ppocr(engine, tmp_path) -> None:
    """A real page: a generated invoice scanned at 200 dpi with mild damage, read by PP-OCR
    alone under the `accurate` policy, gives the labelled invoice number and total."""
    document = generate_corpus(
        tmp_path, count=1, seed=7, kinds=("scan",), dpi=200, degradation="mild"
    )[0]
    scan = next(tmp_path.glob("*.jpg"))
    labels = json.loads(scan.with_suffix(".json").read_text())["fields"]
    definition = load_workflow_file(EXAMPLES / "invoice.yaml").model_copy(
        update={"reading": ReadingPolicy.ACCURATE}
    )
    result = extract_document(scan.read_bytes(), definition, ocr=FakeOcrEngine(), second_ocr=engine)
    assert isinstance(result, ExtractionResult), result
    assert result.pages_read == {"ppocr": 1}
    found = result.values()
    assert found["invoice_number"] == labels["invoice_number"], document
    assert found["total"] == labels["total"]
    assert {result.fields[n].reading for n in ("invoice_number", "total")} == {"ppocr"}
