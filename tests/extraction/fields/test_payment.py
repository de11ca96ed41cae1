"""The amount paid (tendered minus change) and how it settles a receipt's total."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from docflow.extraction.definition import (
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
    LabelLocator,
    PatternLocator,
)
from docflow.extraction.fields.payment import amount_paid, last_amount
from docflow.extraction.fields.view import view_document
from docflow.extraction.model import DocumentKind, Page, ReadDocument
from docflow.extraction.pipeline import extract_fields

PageMaker = Callable[..., Page]


def total_of(page: Page) -> str | None:
    definition = ExtractionWorkflowDefinition(
        name="t", fields=[FieldDef(name="total", type=FieldType.MONEY)]
    )
    result = extract_fields(ReadDocument(DocumentKind.JPEG, (page,)), definition)
    return result.fields["total"].value


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("CASH : 200. 00", "200.00"),
        ("Cash 1,250.50", "1250.50"),
        ("VISA RM 12.00 63.35", "63.35"),
        ("CHANGE 4,90", "4.90"),
        ("Cash 100", None),
    ],
)
def test_last_amount(text: str, amount: str | None) -> None:
    found = last_amount(text)
    assert (str(found) if found is not None else None) == amount


def test_tendered_minus_change(page: PageMaker) -> None:
    paid = amount_paid(
        view_document(
            ReadDocument(
                DocumentKind.JPEG,
                (page(["Milo 1kg   2  12.50", "bash      100.10", "CHANGE     15.00"]),),
            )
        )
    )
    assert paid is not None and paid.amount == Decimal("85.10") and paid.with_change


def test_change_larger_than_tendered_is_a_misread(page: PageMaker) -> None:
    view = view_document(ReadDocument(DocumentKind.JPEG, (page(["CASH 5.00", "CHANGE 50.00"]),)))
    assert amount_paid(view) is None


def test_change_before_any_tender_line_is_ignored(page: PageMaker) -> None:
    view = view_document(ReadDocument(DocumentKind.JPEG, (page(["CHANGE 1.00", "VISA 9.00"]),)))
    paid = amount_paid(view)
    assert paid is not None and paid.amount == Decimal("9.00") and not paid.with_change


def test_paid_amount_picks_among_several_totals(page: PageMaker) -> None:
    rows = [
        "Total Sales (Excluding GST):   28.00",
        "Total Sales (Inclusive of GST) :",
        "CASH :                 29.68",
        "Change :                0.00",
        "GST SUMMARY",
        "Total :         28.00    1.68",
    ]
    assert total_of(page(rows)) == "29.68"


def test_paid_amount_stands_in_for_a_missing_total(page: PageMaker) -> None:
    rows = ["Total (Inclusive of GST):", "e000", "CASH : 200. 00", "CHANGE : 10. 00"]
    assert total_of(page(rows)) == "190.00"


def test_a_clear_total_is_not_overridden(page: PageMaker) -> None:
    # change misread: a total found by an exact label stands
    rows = ["TOTAL          55.10", "CASH           60.10", "CHANGE          4.00"]
    assert total_of(page(rows)) == "55.10"


def test_tender_without_change_does_not_override(page: PageMaker) -> None:
    rows = ["Total Sales   6.00", "CASH  100.00"]
    assert total_of(page(rows)) == "6.00"


def test_pay_line_counts_as_tendered(page: PageMaker) -> None:
    rows = ["Qty 8            19.20", "Pay              20,00", "Change            0.80"]
    assert total_of(page(rows)) == "19.20"


def test_a_total_two_locators_agree_on_beats_a_larger_single_find(page: PageMaker) -> None:
    total = FieldDef(
        name="total",
        type=FieldType.MONEY,
        locators=[
            LabelLocator(labels=["Total"], direction="right"),
            PatternLocator(pattern=r"^TOTAL\s+(\S+)$"),
        ],
    )
    definition = ExtractionWorkflowDefinition(name="t", fields=[total])
    rows = ["Total Sales   11.10", "TOTAL     3.21"]
    document = ReadDocument(DocumentKind.JPEG, (page(rows),))
    assert extract_fields(document, definition).fields["total"].value == "3.21"


def test_change_equal_to_the_tendered_amount_is_no_payment(page: PageMaker) -> None:
    rows = ["Cash   5.00", "Amount Incl. GST   5.00", "Change   5.00"]
    assert amount_paid(view_document(ReadDocument(DocumentKind.JPEG, (page(rows),)))) is None


def test_a_total_without_cents_gives_way_to_a_confirmed_amount_paid(page: PageMaker) -> None:
    rows = ["TOTAL          35", "Cash       10.50", "Change      2.15"]
    assert total_of(page(rows)) == "8.35"
    assert total_of(page(["TOTAL       9.35", "Cash       10.50", "Change      2.15"])) == "9.35"


def test_the_tender_line_nearest_the_change_counts(page: PageMaker) -> None:
    rows = [
        "010100 Pay parking ticket   5.00 RM",
        "Amount Incl. GST            5.00 RM",
        "Accepted total             10.00 RM",
        "Change                      5.00 RM",
    ]
    paid = amount_paid(view_document(ReadDocument(DocumentKind.JPEG, (page(rows),))))
    assert paid is not None and paid.amount == Decimal("5.00")


def test_a_locale_profile_adds_its_tender_words(page: PageMaker) -> None:
    view = view_document(ReadDocument(DocumentKind.JPEG, (page(["TUNAI 20.00", "BAKI 4.50"]),)))
    assert amount_paid(view) is None
    paid = amount_paid(view, frozenset({"tunai"}))
    assert paid is not None and paid.amount == Decimal("20.00")
