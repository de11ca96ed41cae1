"""Each locator on hand-built pages, through `extract_fields` with a one-field workflow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef
from docflow.extraction.fields.locate import locate
from docflow.extraction.fields.view import view_document
from docflow.extraction.model import DocumentKind, Page, ReadDocument, TextSource
from docflow.extraction.patterns import MAX_MATCHES
from docflow.extraction.pipeline import extract_fields
from docflow.extraction.profiles import merge
from docflow.extraction.result import FieldResult

from .conftest import lone

PageMaker = Callable[..., Page]


def field(page: Page | list[Page], **spec: Any) -> FieldResult:
    definition = ExtractionWorkflowDefinition(name="t", fields=[FieldDef(name="f", **spec)])
    pages = tuple(page) if isinstance(page, list) else (page,)
    return extract_fields(ReadDocument(DocumentKind.PDF, pages), definition).fields["f"]


def label(*labels: str, direction: str = "any") -> list[dict[str, Any]]:
    return [{"kind": "label", "labels": list(labels), "direction": direction}]


def test_label_value_to_the_right(page: PageMaker) -> None:
    p = page(["Invoice No:   INV-0042        Date: 14/03/2026"])
    result = field(p, type="string", locators=label("Invoice No"))
    assert (result.value, result.locator, result.page) == ("INV-0042", "label", 1)
    assert result.confidence == lone(1.0, "text")
    assert result.box is not None and result.box.x0 == pytest.approx(14 * 0.012)


def test_label_value_below(page: PageMaker) -> None:
    p = page(["Invoice Date     Due Date", "14/03/2026       28/03/2026"])
    assert field(p, type="date", locators=label("Due Date")).value == "2026-03-28"
    below = field(p, type="date", locators=label("Invoice Date", direction="below"))
    assert below.value == "2026-03-14"
    assert below.confidence == lone(0.85, "date")


def test_right_only_ignores_the_row_below(page: PageMaker) -> None:
    p = page(["Total", "12.00"])
    result = field(p, type="money", locators=label("Total", direction="right"))
    assert result.value is None and result.confidence == 0.0


def test_noisy_ocr_label_is_found_with_a_lower_score(page: PageMaker) -> None:
    p = page(["Invoice Nurnber : 7781"], source=TextSource.OCR, confidence=0.9)
    result = field(p, type="string", locators=label("Invoice Number"))
    assert result.value == "7781"
    assert 0.6 < result.confidence < 0.9


def test_label_split_across_words_and_value_with_currency(page: PageMaker) -> None:
    p = page(["GRAND   TOTAL  (RM) :   RM 1,234.50"])
    result = field(p, type="money", locators=label("Grand Total"))
    assert (result.value, result.raw) == ("1234.50", "RM 1,234.50")


def test_candidate_that_parses_as_the_type_is_chosen(page: PageMaker) -> None:
    p = page(["Date: Monday 14 March 2026 at 10:00"])
    assert field(p, type="date", locators=label("Date")).value == "2026-03-14"


def test_longer_phrase_ending_in_the_label_is_discounted(page: PageMaker) -> None:
    p = page(["Sub Total   90.00", "Total Tax   10.00", "Total      100.00"])
    result = field(p, type="money", locators=label("Total"))
    assert result.value == "100.00"
    assert result.confidence == lone(1.0, "amount")  # the others are too weak to be rivals


def test_misread_symbols_before_a_value_make_it_less_certain(page: PageMaker) -> None:
    p = page(["TOTAL: ¥%. 80"], source=TextSource.OCR)
    result = field(p, type="money", locators=label("Total"))
    assert (result.value, result.confidence) == ("80.00", lone(0.7, "amount"))


def test_value_that_does_not_parse_is_reported_not_trusted(page: PageMaker) -> None:
    p = page(["Total: call us"])
    result = field(p, type="money", locators=label("Total"))
    assert result.value is None
    assert result.raw == "call us"
    assert result.confidence <= 0.2
    assert result.errors and "not an amount" in result.errors[0]


def test_pattern_takes_the_first_group(page: PageMaker) -> None:
    p = page(["Thank you", "Ref: PO-2026-77 (internal)"])
    result = field(p, type="string", locators=[{"kind": "pattern", "pattern": r"PO-(\d{4}-\d+)"}])
    assert (result.value, result.locator) == ("2026-77", "pattern")
    assert result.box is not None and result.box.y0 == pytest.approx(0.03 + 0.025)


def test_pattern_without_groups_takes_the_match(page: PageMaker) -> None:
    p = page(["Paid in EUR today"])
    result = field(p, type="string", locators=[{"kind": "pattern", "pattern": r"\b[A-Z]{3}\b"}])
    assert result.value == "EUR"


def test_a_pattern_reads_at_most_max_matches_of_a_document(page: PageMaker) -> None:
    """Each match costs a pass over its row's words: a pattern matching every word of a page
    full of words would cost the square of the page's size."""
    rows = [" ".join(f"{r}x{i}" for i in range(60)) for r in range(5)]
    definition = ExtractionWorkflowDefinition(
        name="t", fields=[FieldDef(name="f", locators=[{"kind": "pattern", "pattern": r"\dx\d+"}])]
    )
    view = view_document(ReadDocument(DocumentKind.PDF, (page(rows),)))
    found = locate(view, definition, merge(definition.selected_profiles)).by_field["f"]
    assert len(found) == MAX_MATCHES < 5 * 60
    assert [c.raw for c in found[:2]] == ["0x0", "0x1"] and found[-1].raw == f"1x{MAX_MATCHES - 61}"


REGION = {"kind": "region", "box": {"x0": 0.55, "y0": 0.07, "x1": 0.85, "y1": 0.1}}
ANCHORED = {
    **REGION,
    "anchor": "Amount Due",
    "anchor_box": {"x0": 0.048, "y0": 0.08, "x1": 0.168, "y1": 0.095},
}
TEMPLATE_ROWS = ["Acme Ltd", "", "    Amount Due                            1,250.00"]


def test_region_takes_the_words_inside_the_box(page: PageMaker) -> None:
    result = field(page(TEMPLATE_ROWS), type="money", locators=[REGION])
    assert (result.value, result.locator) == ("1250.00", "region")


def test_region_without_anchor_misses_a_shifted_scan(page: PageMaker) -> None:
    shifted = page(TEMPLATE_ROWS, dx=0.06, dy=0.05)
    assert field(shifted, type="money", locators=[REGION]).value is None


@pytest.mark.parametrize(
    ("dx", "dy", "scale"), [(0.06, 0.05, 1.0), (0.0, 0.0, 0.9), (0.02, 0.1, 1.1)]
)
def test_anchored_region_follows_a_shifted_or_rescaled_scan(
    page: PageMaker, dx: float, dy: float, scale: float
) -> None:
    scan = page(TEMPLATE_ROWS, dx=dx, dy=dy, scale=scale)
    result = field(scan, type="money", locators=[ANCHORED])
    assert result.value == "1250.00"
    assert result.confidence == lone(1.0, "amount")


def test_anchor_missing_falls_back_to_the_template_box_less_surely(page: PageMaker) -> None:
    rows = ["Acme Ltd", "", "    Balance                               1,250.00"]
    result = field(page(rows), type="money", locators=[ANCHORED])
    assert result.value == "1250.00"
    assert result.confidence == lone(0.7, "amount")


def test_region_on_another_page(page: PageMaker) -> None:
    pages = [page(["nothing here"]), page(TEMPLATE_ROWS, number=2)]
    region = {**REGION, "page": 2}
    result = field(pages, type="money", locators=[region])
    assert (result.value, result.page) == ("1250.00", 2)


def test_string_region_keeps_all_its_lines(page: PageMaker) -> None:
    rows = ["Ship to:", "Jane Doe", "1 Main St"]
    box = {"kind": "region", "box": {"x0": 0.0, "y0": 0.05, "x1": 0.5, "y1": 0.11}}
    assert field(page(rows), type="string", locators=[box]).value == "Jane Doe 1 Main St"
