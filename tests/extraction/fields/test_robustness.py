"""Whatever words a reader hands over, field extraction returns a result and never raises."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef
from docflow.extraction.model import DocumentKind, Page, ReadDocument, Rect, TextSource, Word
from docflow.extraction.pipeline import extract_fields
from docflow.extraction.result import ExtractionResult

DEFINITION = ExtractionWorkflowDefinition(
    name="everything",
    date_order="MDY",
    fields=[
        FieldDef(name="company"),
        FieldDef(name="address", required=False),
        FieldDef(name="invoice_number"),
        FieldDef(name="date", type="date"),
        FieldDef(name="total", type="money"),
        FieldDef(name="count", type="integer", required=False),
        FieldDef(name="rate", type="decimal", required=False),
        FieldDef(name="currency", type="enum", enum_values=["EUR", "USD"]),
        FieldDef(name="code", type="regex", pattern=r"[A-Z]{2}\d+", required=False),
        FieldDef(
            name="region_total",
            type="money",
            required=False,
            locators=[
                {
                    "kind": "region",
                    "box": {"x0": 0.5, "y0": 0.5, "x1": 1.0, "y1": 1.0},
                    "anchor": "Total",
                    "anchor_box": {"x0": 0.1, "y0": 0.5, "x1": 0.2, "y1": 0.52},
                },
                {"kind": "pattern", "pattern": r"(\d+[.,]\d\d)"},
                {"kind": "label", "labels": ["Total:", "Amount"], "direction": "below"},
            ],
        ),
        FieldDef(
            name="items",
            type="line_items",
            required=False,
            columns=[
                {"name": "description", "labels": ["Item"]},
                {"name": "qty", "type": "integer", "labels": ["Qty"]},
                {"name": "amount", "type": "money", "labels": ["Amount", "Total"]},
                {"name": "day", "type": "date", "labels": ["Date"]},
            ],
        ),
    ],
)

TOKENS = st.one_of(
    st.sampled_from(
        [
            "Total",
            "TOTAL:",
            "Date",
            "Invoice",
            "No:",
            "Qty",
            "Item",
            "Amount",
            "RM",
            "€",
            "$",
            "SDN",
            "BHD",
            "Ltd",
            "Tel:",
            "(RM)",
            "12.50",
            "1.234,56",
            "03/04/2026",
            "14",
            "Mar",
            "2026",
            ":",
            "-",
            "(",
            ")",
            "Sub",
            "Tax",
            "GST",
            "EUR",
            "x",
            "Bill",
            "To:",
            "#",
        ]
    ),
    st.text(min_size=1, max_size=12).filter(lambda t: t.strip() != ""),
)


@st.composite
def pages(draw: st.DrawFn) -> Page:
    words = []
    for i in range(draw(st.integers(0, 60))):
        x0 = draw(st.floats(0, 0.95))
        y0 = draw(st.floats(0, 0.98))
        width = draw(st.floats(0.0, 0.3))
        height = draw(st.floats(0.0, 0.05))
        box = Rect(x0, y0, min(1.0, x0 + width), min(1.0, y0 + height))
        conf = draw(st.floats(0, 1))
        words.append(Word(draw(TOKENS), box, conf, draw(st.integers(0, 5)), i % 3))
    source = draw(st.sampled_from(list(TextSource)))
    return Page(1, 612, 792, source, tuple(words))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages())
def test_any_page_gives_a_result(page: Page) -> None:
    result = extract_fields(ReadDocument(DocumentKind.PNG, (page,)), DEFINITION)
    assert isinstance(result, ExtractionResult)
    assert 0.0 <= result.confidence <= 1.0
    assert set(result.fields) | set(result.line_items) == {f.name for f in DEFINITION.fields}
    for field in result.fields.values():
        assert 0.0 <= field.confidence <= 1.0
        assert field.value is not None or field.confidence <= 0.2
