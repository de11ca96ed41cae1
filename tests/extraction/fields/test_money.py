from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docflow.extraction.definition import FieldType
from docflow.extraction.fields import parse_value


def money(raw: str) -> tuple[str | None, str | None]:
    parsed = parse_value(FieldType.MONEY, raw)
    return parsed.value, parsed.currency


@pytest.mark.parametrize(
    ("raw", "value", "currency"),
    [
        ("1,234.56", "1234.56", None),
        ("1.234,56", "1234.56", None),
        ("1 234,56", "1234.56", None),
        ("1'234.50", "1234.50", None),
        ("12,34,567.00", "1234567.00", None),
        ("1,234", "1234.00", None),
        ("12,5", "12.50", None),
        ("0.5", "0.50", None),
        ("$1,234.56", "1234.56", "USD"),
        ("€ 12,00", "12.00", "EUR"),
        ("£7", "7.00", "GBP"),
        ("¥1,200", "1200.00", "JPY"),
        ("RM55.10", "55.10", "MYR"),
        ("RM 55.10", "55.10", "MYR"),
        ("55.10 RM", "55.10", "MYR"),
        ("USD 1,234.5", "1234.50", "USD"),
        ("1.234,56 EUR", "1234.56", "EUR"),
        ("EUR1.234", "1234.00", "EUR"),
        ("CHF 99.95", "99.95", "CHF"),
        ("-12.00", "-12.00", None),
        ("12.00-", "-12.00", None),
        ("(1,234.56)", "-1234.56", None),
        ("-€12.00", "-12.00", "EUR"),
        ("€-12.00", "-12.00", "EUR"),
        ("RM -0.02", "-0.02", "MYR"),
        ("200. 00", "200.00", None),
        ("55 10", "55.10", None),
        ("1.005", "1005.00", None),
        ("2.345", "2345.00", None),
        ("0.125", "0.13", None),
    ],
)
def test_money_forms(raw: str, value: str, currency: str | None) -> None:
    assert money(raw) == (value, currency)


@pytest.mark.parametrize(
    "raw", ["", "abc", "RM", "12.34.56,7,8x", "55.10 3.12", "2 52.00", "1,2345.00", "15%", "(RM)"]
)
def test_money_rejects(raw: str) -> None:
    parsed = parse_value(FieldType.MONEY, raw)
    assert parsed.value is None
    assert parsed.error


def test_three_digits_after_one_mark_group_thousands_unless_the_whole_part_is_zero() -> None:
    assert money("10.005")[0] == "10005.00"
    assert money("0,005")[0] == "0.01"  # rounded half up to cents
    assert money("1.2,5")[0] is None


amounts = st.decimals(
    min_value=Decimal("-9999999.99"), max_value=Decimal("9999999.99"), places=2
).filter(lambda d: d.is_finite())


def _grouped(amount: Decimal, thousands: str, decimal: str) -> str:
    sign = "-" if amount < 0 else ""
    whole, _, cents = f"{abs(amount):.2f}".partition(".")
    groups = []
    while whole:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    return f"{sign}{thousands.join(groups)}{decimal}{cents}"


@given(
    amounts,
    st.sampled_from([(",", "."), (".", ","), (" ", ","), ("'", "."), ("", ".")]),
    st.sampled_from(["", "$", "€", "RM ", "EUR "]),
)
def test_money_round_trip(amount: Decimal, style: tuple[str, str], prefix: str) -> None:
    text = prefix + _grouped(amount, *style)
    value, _ = money(text)
    assert value == f"{amount:.2f}"
