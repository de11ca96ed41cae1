from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef
from docflow.extraction.model import DocumentKind, Page, ReadDocument, TextSource
from docflow.extraction.pipeline import extract_fields
from docflow.extraction.result import ExtractionResult

PageMaker = Callable[..., Page]

COLUMNS: list[dict[str, Any]] = [
    {"name": "description", "labels": ["Description", "Item"], "required": True},
    {"name": "quantity", "type": "decimal", "labels": ["Qty", "Quantity"]},
    {"name": "unit_price", "type": "money", "labels": ["Unit Price", "Price"]},
    {"name": "amount", "type": "money", "labels": ["Amount", "Total"]},
]

INVOICE = [
    "Acme Ltd",
    "Invoice No: 42",
    "",
    "Description              Qty    Unit Price      Amount",
    "Widget, large            2      10.00           20.00",
    "Consulting services      1.5    100.00         150.00",
    "  for the March project",
    "  (remote)",
    "Translation into German and French",
    "                         3      5.00            15.00",
    "",
    "Subtotal                                       {subtotal}",
    "Tax                                             0.00",
    "Total                                          {total}",
]


def extract(page: Page, *, subtotal: bool = True) -> ExtractionResult:
    fields = [FieldDef(name="line_items", type="line_items", columns=COLUMNS, required=False)]
    fields.append(FieldDef(name="total", type="money"))
    if subtotal:
        fields.append(FieldDef(name="subtotal", type="money", required=False))
    definition = ExtractionWorkflowDefinition(name="t", fields=fields)
    return extract_fields(ReadDocument(DocumentKind.PDF, (page,)), definition)


def rows(total: str = "185.00", subtotal: str = "185.00") -> list[str]:
    return [r.format(total=total, subtotal=subtotal) for r in INVOICE]


def clean_rows(total: str = "185.00", subtotal: str = "185.00") -> list[str]:
    """The invoice with every item on one row."""
    lines = rows(total, subtotal)
    lines[8:10] = ["Cables                   3      5.00            15.00"]
    return lines


def test_rows_columns_and_multi_line_descriptions(page: PageMaker) -> None:
    table = extract(page(rows())).line_items["line_items"]
    assert table.rows == (
        {"description": "Widget, large", "quantity": "2", "unit_price": "10.00", "amount": "20.00"},
        {
            "description": "Consulting services for the March project (remote) "
            "Translation into German and French",
            "quantity": "1.5",
            "unit_price": "100.00",
            "amount": "150.00",
        },
        {"description": None, "quantity": "3", "unit_price": "5.00", "amount": "15.00"},
    )
    assert table.errors == ("row 3 description: missing",)


def test_sum_matching_the_subtotal_keeps_confidence(page: PageMaker) -> None:
    table = extract(page(clean_rows())).line_items["line_items"]
    assert len(table.rows) == 3 and table.errors == ()
    assert table.confidence == 1.0


def test_sum_mismatch_lowers_confidence_and_says_so(page: PageMaker) -> None:
    table = extract(page(clean_rows("200.00", "190.00"))).line_items["line_items"]
    assert table.confidence == pytest.approx(0.5)
    assert table.errors == ("sum of amount (185.00) does not match subtotal (190.00)",)


def test_sum_checked_against_the_total_without_a_subtotal(page: PageMaker) -> None:
    clean = [r for r in clean_rows() if "Subtotal" not in r]
    assert extract(page(clean), subtotal=False).line_items["line_items"].errors == ()
    wrong = [r for r in clean_rows(total="99.00") if "Subtotal" not in r]
    table = extract(page(wrong), subtotal=False).line_items["line_items"]
    assert table.errors == ("sum of amount (185.00) does not match total (99.00)",)


def test_description_spilling_into_the_quantity_column_moves_back(page: PageMaker) -> None:
    spill = [
        "Description        Qty    Unit Price    Amount",
        "Translation manuals 12     5.00          60.00",
        "Total                                    60.00",
    ]
    table = extract(page(spill)).line_items["line_items"]
    assert table.rows[0]["description"] == "Translation manuals"
    assert table.rows[0]["quantity"] == "12"
    assert table.errors == ()


def test_no_header_no_table(page: PageMaker) -> None:
    table = extract(page(["Total 10.00"])).line_items["line_items"]
    assert (table.rows, table.confidence, table.errors) == ((), 0.0, ("no table header found",))


def test_required_table_missing_fails_the_document(page: PageMaker) -> None:
    definition = ExtractionWorkflowDefinition(
        name="t", fields=[FieldDef(name="items", type="line_items", columns=COLUMNS)]
    )
    result = extract_fields(ReadDocument(DocumentKind.PDF, (page(["Hello"]),)), definition)
    assert result.status == "FAILED"
    assert result.reasons == ("items: required field not found",)


def test_table_rules_read_as_words_are_left_out(page: PageMaker) -> None:
    lines = clean_rows()
    lines.insert(4, "eee ieee ree ee omens")  # the rule under the header
    lines[5] += "  a oe ees"  # shading at the end of an item row
    drawn = page(lines)
    junk = {"eee", "ieee", "ree", "ee", "omens", "a", "oe", "ees"}
    words = tuple(replace(w, confidence=0.2 if w.text in junk else 0.95) for w in drawn.words)
    scanned = replace(drawn, source=TextSource.OCR, words=words)
    table = extract(scanned).line_items["line_items"]
    assert [r["description"] for r in table.rows] == [
        "Widget, large",
        "Consulting services for the March project (remote)",
        "Cables",
    ]
