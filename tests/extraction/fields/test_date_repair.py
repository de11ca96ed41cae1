"""Garbled dates after a "Date" label, repaired only when one reading fits."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import pytest

from docflow.extraction.definition import (
    DateOrder,
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
)
from docflow.extraction.fields.date_repair import repair_date, repair_textual
from docflow.extraction.model import DocumentKind, Page, ReadDocument
from docflow.extraction.pipeline import extract_fields

PageMaker = Callable[..., Page]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("03/0272018", date(2018, 2, 3)),  # the second separator read as a 7
        ("17/097 2017", date(2017, 9, 17)),  # a digit too many before a lost separator
        ("21/88/2017", date(2017, 8, 21)),  # only 08 makes a month of 88 by one digit
        ("30/09/2617", date(2017, 9, 30)),  # only 2017 is a plausible year by one digit
        ("14/fMay/2017 02:56:39", date(2017, 5, 14)),
        ("05/07/2017", date(2017, 7, 5)),
        ("24/07/7201?", None),
        ("15/19/2017", None),  # 09, 10, 11 or 12: several one-digit readings, none taken
        ("Cashier 12", None),
    ],
)
def test_repair_date(text: str, found: date | None) -> None:
    assert repair_date(text, DateOrder.DAY_FIRST) == found


def test_month_first_order_is_respected() -> None:
    assert repair_date("09/177 2017", DateOrder.MONTH_FIRST) == date(2017, 9, 17)
    assert repair_date("2017/09/17x", DateOrder.YEAR_FIRST) is None


def test_textual_repair_needs_a_month_name() -> None:
    assert repair_textual("59581331715") is None
    assert repair_textual("14/fMay/2017") == date(2017, 5, 14)


def date_of(page: Page) -> str | None:
    definition = ExtractionWorkflowDefinition(
        name="t",
        fields=[FieldDef(name="date", type=FieldType.DATE)],
        date_order=DateOrder.DAY_FIRST,
    )
    return extract_fields(ReadDocument(DocumentKind.JPEG, (page,)), definition).fields["date"].value


def test_garbled_date_after_its_label_is_repaired(page: PageMaker) -> None:
    assert date_of(page(["Doc No CS0241998 Date' 03/0272018", "Total 21.20"])) == "2018-02-03"


def test_garbled_date_without_a_label_is_left_alone(page: PageMaker) -> None:
    assert date_of(page(["Doc No 03/0272018", "Total 21.20"])) is None


def test_a_legible_date_is_preferred_to_a_repair(page: PageMaker) -> None:
    rows = ["Date: 21/88/2017", "Printed 22/08/2017 10:01"]
    assert date_of(page(rows)) == "2017-08-22"
