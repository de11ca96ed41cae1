"""The reading policy: which engine reads a scanned page, and when PP-OCR re-reads it."""

from __future__ import annotations

import io
import math
from dataclasses import replace

import pytest
from PIL import Image
from pydantic import ValidationError
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef, ReadingPolicy
from docflow.extraction.fields.confidence import INVALID_CAP
from docflow.extraction.ocr import FakeOcrEngine, ppocr_engine
from docflow.extraction.pipeline import extract_document
from docflow.extraction.reading import TWO_READINGS, merge_readings, pair_confidence
from docflow.extraction.result import DocumentStatus, ExtractionResult, FieldResult

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


def reading_of(engine: str, **values: tuple[str | None, float]) -> ExtractionResult:
    fields = {
        name: FieldResult(name, value, value, confidence, reading=engine)
        for name, (value, confidence) in values.items()
    }
    return ExtractionResult(DocumentStatus.REVIEW_REQUIRED, 0.0, fields)


def test_agreement_raises_a_confidence_and_dissent_lowers_it() -> None:
    first = reading_of("tesseract", company=("KEDAI MAJU", 0.7), total=("9.90", 0.7))
    second = reading_of("ppocr", company=("KEDAI MAJU", 0.7), total=("9.80", 0.6))
    fields, _ = merge_readings(first, second, RECEIPT)
    company, total = fields["company"], fields["total"]
    assert company.agreement is True and company.confidence > 0.7
    assert company.confidence == pytest.approx(
        pair_confidence("agree", 0.7, 0.7, second=False, kind="text"), abs=1e-4
    )
    assert (total.value, total.agreement) == ("9.90", False) and total.confidence < 0.7


def test_one_reading_alone_is_weighed_by_its_own_case() -> None:
    weights = {
        **TWO_READINGS,
        "first_only": {"intercept": -1.0, "first": 1.0},
        "second_only": {"intercept": 1.0, "second": 1.0, "text": 0.0},
    }
    first = reading_of("tesseract", company=("KEDAI MAJU", 0.5), total=(None, 0.0))
    second = reading_of("ppocr", company=(None, 0.0), total=("9.90", 0.5))
    fields, _ = merge_readings(first, second, RECEIPT, weights)
    assert fields["company"].confidence == pytest.approx(1 / (1 + math.e), abs=1e-4)
    assert fields["total"].confidence == pytest.approx(1 / (1 + math.exp(-1)), abs=1e-4)
    assert fields["company"].agreement is None and fields["total"].reading == "ppocr"


def test_the_fit_may_prefer_the_second_reading_of_text_over_a_surer_first() -> None:
    weights = {
        **TWO_READINGS,
        "disagree": {
            "intercept": 0.0,
            "own": 1.0,
            "other": -1.0,
            "second": 0.0,
            "second_text": 3.0,
        },
    }
    first = reading_of("tesseract", company=("KEDAI MAJV", 0.8), total=("9.90", 0.8))
    second = reading_of("ppocr", company=("KEDAI MAJU", 0.6), total=("9.80", 0.6))
    fields, _ = merge_readings(first, second, RECEIPT, weights)
    assert fields["company"].value == "KEDAI MAJU"  # text: the second reading is trusted more
    assert fields["total"].value == "9.90"  # an amount: the surer reading wins


def test_a_value_that_does_not_parse_stays_capped_whatever_the_readings_say() -> None:
    first = reading_of("tesseract", date=("32/13/2018", 0.2))
    first.fields["date"] = replace(first.fields["date"], errors=("not a date",))
    second = reading_of("ppocr", date=("32/13/2018", 0.2))
    second.fields["date"] = replace(second.fields["date"], errors=("not a date",))
    fields, _ = merge_readings(
        first, second, RECEIPT, {**TWO_READINGS, "agree": {"intercept": 9.0}}
    )
    assert fields["date"].confidence <= INVALID_CAP


def test_a_reread_that_times_out_keeps_the_first_reading_and_counts_its_pages() -> None:
    first, second = FakeOcrEngine.from_lines(FULL[:2]), FakeOcrEngine(timeout=True)
    result = run("auto", first, second)
    assert second.calls == 1
    assert result.values()["company"] == "KEDAI MAJU SDN BHD"
    assert {f.reading for f in result.fields.values()} == {"tesseract"}
    assert result.pages_read == {"tesseract": 1, "ppocr": 1}
