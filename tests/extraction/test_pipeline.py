"""The engine entry point end to end: bytes and a workflow in, a typed result or Rejected out."""

from __future__ import annotations

import io
from typing import Any

import pypdfium2 as pdfium
import pytest
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas
from tests.support.timing import within

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.fields.confidence import Signals, field_confidence
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, Page, ReadDocument, Rect, TextSource, Word
from docflow.extraction.ocr import FakeOcrEngine, default_engine
from docflow.extraction.pipeline import extract_document, extract_read_document
from docflow.extraction.result import DocumentStatus, ExtractionResult
from support import catastrophic

COLUMNS: list[dict[str, Any]] = [
    {"name": "description", "labels": ["Description"], "required": True},
    {"name": "quantity", "type": "decimal", "labels": ["Qty"]},
    {"name": "amount", "type": "money", "labels": ["Amount"]},
]

WORKFLOW = ExtractionWorkflowDefinition(
    name="invoice",
    date_order="DMY",
    fields=[
        FieldDef(name="vendor_name"),
        FieldDef(name="invoice_number"),
        FieldDef(name="invoice_date", type="date"),
        FieldDef(name="due_date", type="date", required=False),
        FieldDef(name="subtotal", type="money", required=False),
        FieldDef(name="tax", type="money", required=False),
        FieldDef(name="total", type="money"),
        FieldDef(name="currency", type="enum", enum_values=["EUR", "USD", "GBP"]),
        FieldDef(name="line_items", type="line_items", columns=COLUMNS, required=False),
    ],
)


def invoice_pdf(pages: int = 1) -> bytes:
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    height = A4[1]

    def text(x: float, y: float, value: str, size: int = 10) -> None:
        pdf.setFont("Helvetica-Bold" if size > 12 else "Helvetica", size)
        pdf.drawString(x, height - y, value)

    text(50, 60, "Blue Harbour Trading Ltd", 16)
    text(50, 80, "12 Quay Street, Bristol BS1 4DJ")
    text(400, 60, "INVOICE", 16)
    text(50, 130, "Invoice No: BH-2026-0147")
    text(50, 145, "Invoice Date: 14 March 2026")
    text(50, 160, "Due Date: 13/04/2026")
    text(50, 210, "Description")
    text(330, 210, "Qty")
    text(470, 210, "Amount")
    items = [
        ("Oak desk", "1", "€1.250,00"),
        ("Desk lamp", "2", "€84,50"),
        ("Delivery", "1", "€40,00"),
    ]
    for row, (name, qty, amount) in enumerate(items):
        text(50, 230 + row * 18, name)
        text(330, 230 + row * 18, qty)
        text(470, 230 + row * 18, amount)
    text(360, 320, "Subtotal")
    text(470, 320, "€1.374,50")
    text(360, 338, "VAT 20%")
    text(470, 338, "€274,90")
    text(360, 356, "Total Due")
    text(470, 356, "€1.649,40")
    for _ in range(pages):
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_text_pdf_end_to_end() -> None:
    ocr = FakeOcrEngine()
    result = extract_document(invoice_pdf(), WORKFLOW, ocr=ocr)
    assert isinstance(result, ExtractionResult)
    assert ocr.calls == 0  # the text layer is read, nothing is OCRed
    assert result.values() == {
        "vendor_name": "Blue Harbour Trading Ltd",
        "invoice_number": "BH-2026-0147",
        "invoice_date": "2026-03-14",
        "due_date": "2026-04-13",
        "subtotal": "1374.50",
        "tax": "274.90",
        "total": "1649.40",
        "currency": "EUR",
    }
    table = result.line_items["line_items"]
    assert [r["amount"] for r in table.rows] == ["1250.00", "84.50", "40.00"]
    assert table.errors == ()
    # Every value is read from labels except the issuer, a registered name at the very top.
    assert result.status == DocumentStatus.SUCCEEDED and result.reasons == ()
    by_position = Signals(
        ocr=1.0, locator=0.85, kinds=1, consensus=1.0, valid=True, kind="text", position_only=True
    )
    assert result.fields["vendor_name"].confidence == round(field_confidence(by_position), 4)
    by_label = Signals(ocr=1.0, locator=1.0, kinds=1, consensus=1.0, valid=True, kind="amount")
    assert result.fields["total"].confidence == round(field_confidence(by_label), 4)
    assert (result.page_count, result.text_source) == (1, "text_layer")
    stages = {"sniff", "read", "layout", "locate", "combine", "confidence", "line_items", "status"}
    assert stages | {"total"} == set(result.timings_ms)
    assert all(ms >= 0 for ms in result.timings_ms.values())


def test_scanned_image_goes_through_ocr() -> None:
    image = io.BytesIO()
    Image.new("RGB", (850, 1100), "white").save(image, format="PNG")
    ocr = FakeOcrEngine.from_lines(
        [
            "KEDAI MAJU SDN BHD",
            "No 3, Jalan Ros, 47100 Puchong",
            "Date: 05/03/2018",
            "TOTAL RM 9.90",
        ],
        confidence=0.8,
    )
    receipt = ExtractionWorkflowDefinition(
        name="receipt",
        review_threshold=0.75,
        fields=[
            FieldDef(name="company"),
            FieldDef(name="address", required=False),
            FieldDef(name="date", type="date"),
            FieldDef(name="total", type="money"),
        ],
    )
    result = extract_document(image.getvalue(), receipt, ocr=ocr)
    assert isinstance(result, ExtractionResult)
    assert ocr.calls == 1 and result.text_source == "ocr"
    assert result.values() == {
        "company": "KEDAI MAJU SDN BHD",
        "address": "No 3, Jalan Ros, 47100 Puchong",
        "date": "2018-03-05",
        "total": "9.90",
    }
    # Word confidence 0.8 and a name known only from its position: a reviewer should look.
    assert result.status == DocumentStatus.REVIEW_REQUIRED
    (reason,) = result.reasons
    assert reason.startswith("company: confidence ") and reason.endswith(" below 0.75")


def test_unreadable_documents_are_rejected_with_stable_codes() -> None:
    ocr = FakeOcrEngine()
    assert extract_document(b"", WORKFLOW, ocr=ocr) == Rejected(
        RejectCode.EMPTY_FILE, "the file is empty"
    )
    unsupported = extract_document(b"hello, world", WORKFLOW, ocr=ocr)
    assert isinstance(unsupported, Rejected) and unsupported.code == RejectCode.UNSUPPORTED_TYPE
    broken = extract_document(invoice_pdf()[:300], WORKFLOW, ocr=ocr)
    assert isinstance(broken, Rejected) and broken.code == RejectCode.CORRUPT_FILE


def test_limits_are_enforced_by_the_reading_stage() -> None:
    result = extract_document(
        invoice_pdf(pages=2), WORKFLOW, ocr=FakeOcrEngine(), limits=EngineLimits(max_pages=1)
    )
    assert isinstance(result, Rejected) and result.code == RejectCode.TOO_MANY_PAGES


def test_a_failing_stage_becomes_internal_error_not_an_exception() -> None:
    # A reader bug handing over a word without text must not bring the batch down.
    broken_word = Word(None, Rect(0.1, 0.1, 0.2, 0.12), 1.0, 0, 0)  # type: ignore[arg-type]
    document = ReadDocument(
        DocumentKind.PDF, (Page(1, 612, 792, TextSource.TEXT_LAYER, (broken_word,)),)
    )
    result = extract_read_document(document, WORKFLOW)
    assert isinstance(result, Rejected)
    assert result.code == RejectCode.INTERNAL_ERROR
    assert result.reason == "the layout stage failed (AttributeError)"  # the stage is named


def test_empty_pages_fail_with_reasons() -> None:
    document = ReadDocument(DocumentKind.PDF, (Page(1, 612, 792, TextSource.TEXT_LAYER),))
    result = extract_read_document(document, WORKFLOW)
    assert isinstance(result, ExtractionResult)
    assert result.status == DocumentStatus.FAILED
    assert "total: required field not found" in result.reasons


@pytest.mark.tesseract
def test_scanned_invoice_with_real_tesseract() -> None:
    page = pdfium.PdfDocument(invoice_pdf())[0]
    image = page.render(scale=300 / 72).to_pil().convert("L")
    scan = io.BytesIO()
    image.save(scan, format="PNG", dpi=(300, 300))
    result = extract_document(scan.getvalue(), WORKFLOW, ocr=default_engine())
    assert isinstance(result, ExtractionResult)
    assert result.text_source == "ocr"
    values = result.values()
    assert values["invoice_number"] == "BH-2026-0147"
    assert values["invoice_date"] == "2026-03-14"
    assert values["total"] == "1649.40"
    assert values["subtotal"] == "1374.50"
    assert values["currency"] == "EUR"
    assert [r["amount"] for r in result.line_items["line_items"].rows] == [
        "1250.00",
        "84.50",
        "40.00",
    ]
    assert result.status in (DocumentStatus.SUCCEEDED, DocumentStatus.REVIEW_REQUIRED)


def test_a_catastrophic_tenant_pattern_ends_well_under_a_second() -> None:
    """`(a+)+$` over 29 a's and a "!" backtracks for minutes on Python's re, holding the
    interpreter lock; on RE2 the document is done at once, the fields simply empty."""
    workflow = ExtractionWorkflowDefinition.model_validate(catastrophic.workflow_body())
    with within(1.0):
        result = extract_document(catastrophic.pdf(), workflow, ocr=FakeOcrEngine())
    assert isinstance(result, ExtractionResult)
    assert result.values() == {"reference": None, "code": None}
    assert result.status == DocumentStatus.FAILED
