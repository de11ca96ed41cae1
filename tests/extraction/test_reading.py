"""The reading policy: which engine reads a scanned page, and when PP-OCR re-reads it."""

from __future__ import annotations

import io

import pytest
from PIL import Image
from pydantic import ValidationError
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef, ReadingPolicy
from docflow.extraction.ocr import FakeOcrEngine, ppocr_engine
from docflow.extraction.pipeline import extract_document
from docflow.extraction.result import DocumentStatus, ExtractionResult

RECEIPT = ExtractionWorkflowDefinition(
    name="receipt",
    review_threshold=0.75,
    fields=[
        FieldDef(name="company"),
        FieldDef(name="date", type="date"),
        FieldDef(name="total", type="money"),
    ],
)
FULL = ["KEDAI MAJU SDN BHD", "Date: 05/03/2018", "TOTAL RM 9.90"]


def scan() -> bytes:
    image = io.BytesIO()
    Image.new("L", (850, 1100), "white").save(image, format="PNG")
    return image.getvalue()


def with_reading(policy: str) -> ExtractionWorkflowDefinition:
    return RECEIPT.model_copy(update={"reading": ReadingPolicy(policy)})


def run(policy: str, first: FakeOcrEngine, second: FakeOcrEngine | None) -> ExtractionResult:
    result = extract_document(scan(), with_reading(policy), ocr=first, second_ocr=second)
    assert isinstance(result, ExtractionResult)
    return result


def test_the_policy_defaults_to_auto_and_refuses_other_values() -> None:
    assert RECEIPT.reading == ReadingPolicy.AUTO
    with pytest.raises(ValidationError) as caught:
        ExtractionWorkflowDefinition.model_validate(
            {"name": "x", "fields": [{"name": "total"}], "reading": "best"}
        )
    assert caught.value.errors()[0]["loc"] == ("reading",)


def test_fast_reads_with_tesseract_only() -> None:
    first, second = FakeOcrEngine.from_lines(FULL[:2]), FakeOcrEngine.from_lines(FULL)
    result = run("fast", first, second)
    assert (first.calls, second.calls) == (1, 0)
    assert result.values()["total"] is None
    assert result.fields["company"].reading == "tesseract"
    assert result.pages_read == {"tesseract": 1}


def test_accurate_reads_with_ppocr_only_and_with_tesseract_when_there_is_none() -> None:
    first, second = FakeOcrEngine.from_lines(FULL[:2]), FakeOcrEngine.from_lines(FULL)
    result = run("accurate", first, second)
    assert (first.calls, second.calls) == (0, 1)
    assert result.values()["total"] == "9.90"
    assert {f.reading for f in result.fields.values()} == {"ppocr"}
    assert result.pages_read == {"ppocr": 1}
    alone = run("accurate", first, None)
    assert first.calls == 1 and alone.pages_read == {"tesseract": 1}


def test_auto_rereads_when_a_required_field_is_missing_and_keeps_each_better_field() -> None:
    first = FakeOcrEngine.from_lines(FULL[:2], confidence=0.95)
    second = FakeOcrEngine.from_lines(["KEDAI MAJU SDN BHD", "TOTAL RM 9.90"], confidence=0.9)
    result = run("auto", first, second)
    assert (first.calls, second.calls) == (1, 1)
    assert result.values() == {
        "company": "KEDAI MAJU SDN BHD",
        "date": "2018-03-05",
        "total": "9.90",
    }
    company, date, total = (result.fields[n] for n in ("company", "date", "total"))
    assert (company.reading, company.agreement) == ("tesseract", True)  # the surer copy
    assert (date.reading, date.agreement) == ("tesseract", None)  # only Tesseract found it
    assert (total.reading, total.agreement) == ("ppocr", None)
    assert result.status == DocumentStatus.SUCCEEDED and result.reasons == ()
    assert result.pages_read == {"tesseract": 1, "ppocr": 1}
    assert "reread" in result.timings_ms and "total" in result.timings_ms


def test_auto_keeps_the_more_confident_of_two_different_values() -> None:
    first = FakeOcrEngine.from_lines(["KEDAI MAJU SDN BHD", "TOTAL RM 9.90"], confidence=0.6)
    second = FakeOcrEngine.from_lines(["KEDAI MAJU SDN BHD", "TOTAL RM 9.80"], confidence=0.9)
    result = run("auto", first, second)  # the date is missing: re-read
    assert second.calls == 1
    total = result.fields["total"]
    assert (total.value, total.reading, total.agreement) == ("9.80", "ppocr", False)


def test_auto_does_not_reread_a_page_tesseract_read_well() -> None:
    first, second = FakeOcrEngine.from_lines(FULL, confidence=0.95), FakeOcrEngine()
    result = run("auto", first, second)
    assert (first.calls, second.calls) == (1, 0)
    assert result.status == DocumentStatus.SUCCEEDED
    assert result.pages_read == {"tesseract": 1}


def test_text_layer_pages_are_never_ocred() -> None:
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 12)
    pdf.drawString(50, A4[1] - 60, "KEDAI MAJU SDN BHD")
    pdf.drawString(50, A4[1] - 80, "Date: 05/03/2018")
    pdf.showPage()
    pdf.save()
    first, second = FakeOcrEngine(), FakeOcrEngine.from_lines(FULL)
    result = extract_document(buffer.getvalue(), RECEIPT, ocr=first, second_ocr=second)
    assert isinstance(result, ExtractionResult)
    assert (first.calls, second.calls) == (0, 0)  # the total is missing, yet nothing is OCRed
    assert {f.reading for f in result.fields.values()} == {"text_layer"}
    assert result.pages_read == {"text_layer": 1}


@pytest.mark.ppocr
def test_auto_recovers_with_real_ppocr_what_the_first_reading_missed(page_image) -> None:
    lines = [
        (80, 80, "KEDAI MAJU SDN BHD"),
        (80, 160, "Date: 05/03/2018"),
        (80, 240, "TOTAL RM 9.90"),
    ]
    image = page_image(lines, size=(1000, 1300))
    data = io.BytesIO()
    image.save(data, format="PNG", dpi=(200, 200))
    first = FakeOcrEngine()  # a first reading that found nothing at all
    result = extract_document(data.getvalue(), RECEIPT, ocr=first, second_ocr=ppocr_engine())
    assert isinstance(result, ExtractionResult)
    assert result.values() == {
        "company": "KEDAI MAJU SDN BHD",
        "date": "2018-03-05",
        "total": "9.90",
    }
    assert {f.reading for f in result.fields.values()} == {"ppocr"}
    assert result.pages_read == {"tesseract": 1, "ppocr": 1}
