from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docflow.extraction.definition import DateOrder, FieldType
from docflow.extraction.fields import parse_value

DMY, MDY, YMD = DateOrder.DAY_FIRST, DateOrder.MONTH_FIRST, DateOrder.YEAR_FIRST


def iso(raw: str, order: DateOrder = DMY) -> str | None:
    return parse_value(FieldType.DATE, raw, date_order=order).value


@pytest.mark.parametrize(
    "raw",
    [
        "14/03/2026",
        "14-03-2026",
        "14.03.2026",
        "14.03.26",
        "2026-03-14",
        "2026/03/14",
        "20260314",
        "14 Mar 2026",
        "14-MAR-2026",
        "14 March, 2026",
        "14th March 2026",
        "March 14, 2026",
        "Mar 14 2026",
        "Mar. 14, 2026",
        "Saturday, 14 March 2026",
        "2026 Mar 14",
        "14 mars 2026",
        "14. März 2026",
        "14 maart 2026",
        "14 de marzo de 2026".replace(" de ", " "),
        "14 / 03 / 2026",
        "14 - MAR - 2026",
    ],
)
def test_written_forms(raw: str) -> None:
    assert iso(raw) == "2026-03-14"


def test_ambiguous_numeric_dates_follow_the_hint() -> None:
    assert iso("03/04/2026", DMY) == "2026-04-03"
    assert iso("03/04/2026", MDY) == "2026-03-04"
    assert iso("26/03/04", YMD) == "2026-03-04"
    assert iso("04/03/26", DMY) == "2026-03-04"


def test_impossible_order_falls_back_to_the_valid_one() -> None:
    assert iso("03-14-2026", DMY) == "2026-03-14"
    assert iso("14/03/2026", MDY) == "2026-03-14"


def test_two_digit_years_pivot_at_70() -> None:
    assert iso("01/02/69") == "2069-02-01"
    assert iso("01/02/70") == "1970-02-01"
    assert iso("1 Jan 99") == "1999-01-01"


@pytest.mark.parametrize(
    "raw", ["31/02/2026", "2026-13-01", "hello", "14 Foo 2026", "12:30", "1234", "00/00/0000"]
)
def test_invalid_dates(raw: str) -> None:
    parsed = parse_value(FieldType.DATE, raw)
    assert parsed.value is None
    assert parsed.error


MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


@given(
    st.dates(min_value=date(1971, 1, 1), max_value=date(2068, 12, 31)),
    st.sampled_from(
        [
            ("{d:02d}/{m:02d}/{y}", DMY),
            ("{m:02d}/{d:02d}/{y}", MDY),
            ("{y}-{m:02d}-{d:02d}", DMY),
            ("{d}.{m}.{yy:02d}", DMY),
            ("{d} {mon} {y}", MDY),
            ("{mon} {d}, {y}", DMY),
            ("{d}-{MON}-{y}", DMY),
        ]
    ),
)
def test_date_round_trip(day: date, form: tuple[str, DateOrder]) -> None:
    template, order = form
    text = template.format(
        d=day.day,
        m=day.month,
        y=day.year,
        yy=day.year % 100,
        mon=MONTHS[day.month - 1],
        MON=MONTHS[day.month - 1].upper(),
    )
    assert iso(text, order) == day.isoformat()


def test_numbers_separated_by_spaces_are_not_a_date() -> None:
    assert iso("3 8 34") is None
    assert iso("14 03 2026") is None


def test_separator_read_into_the_value_is_ignored() -> None:
    assert iso(":28/04/18") == "2018-04-28"
    assert iso("14/03/2026,") == "2026-03-14"
    assert iso("05/07/2017.") == "2017-07-05"
