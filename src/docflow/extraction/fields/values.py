"""Typed values: turn the raw text of a field into its normalised form, or say why it cannot be.

Normal forms: integers and decimals as plain digit strings (`1234`, `-3.5`), money as a decimal
string with two places (`1234.50`) plus the currency code when one is printed, dates as ISO 8601,
enum values as the workflow's canonical spelling, strings and regex values stripped with inner
whitespace collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from docflow.extraction.definition import DateOrder, FieldType
from docflow.extraction.fields.dates import DateError, parse_date
from docflow.extraction.fields.money import NumberError, format_money, parse_money, parse_number
from docflow.extraction.patterns import full_match


@dataclass(frozen=True, slots=True)
class ParsedValue:
    """A normalised value, or the reason the raw text is not a valid value of its type."""

    value: str | None
    error: str | None = None
    currency: str | None = None  # ISO code printed with a money value

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_value(
    field_type: FieldType,
    raw: str,
    *,
    date_order: DateOrder = DateOrder.DAY_FIRST,
    enum_values: Sequence[str] = (),
    pattern: str | None = None,
) -> ParsedValue:
    """Normalise `raw` as a value of `field_type`; never raises for bad input."""
    text = " ".join(raw.split())
    if field_type in (FieldType.MONEY, FieldType.INTEGER, FieldType.DECIMAL, FieldType.DATE):
        # a separator read as part of the value: "Date :28/04/18", "05/07/2017."
        text = text.strip(":;,").rstrip(".").strip()
    if not text:
        return ParsedValue(None, "empty value")
    if field_type == FieldType.MONEY:
        return _money(text)
    if field_type in (FieldType.INTEGER, FieldType.DECIMAL):
        return _number(text, integer=field_type == FieldType.INTEGER)
    if field_type == FieldType.DATE:
        try:
            return ParsedValue(parse_date(text, date_order).isoformat())
        except DateError:
            return ParsedValue(None, f"not a date: {text!r}")
    if field_type == FieldType.ENUM:
        return _enum(text, enum_values)
    if field_type == FieldType.REGEX:
        if pattern is not None and full_match(pattern, text):
            return ParsedValue(text)
        return ParsedValue(None, f"does not match the pattern: {text!r}")
    if field_type == FieldType.LINE_ITEMS:
        return ParsedValue(None, "line items have no scalar value")
    return ParsedValue(text)


def _money(text: str) -> ParsedValue:
    try:
        money = parse_money(text)
    except NumberError:
        return ParsedValue(None, f"not an amount: {text!r}")
    return ParsedValue(format_money(money.amount), currency=money.currency)


def _number(text: str, *, integer: bool) -> ParsedValue:
    kind = "an integer" if integer else "a number"
    try:
        number = parse_number(text)
    except NumberError:
        return ParsedValue(None, f"not {kind}: {text!r}")
    if integer:
        if number != number.to_integral_value():
            return ParsedValue(None, f"not {kind}: {text!r}")
        return ParsedValue(str(int(number)))
    return ParsedValue(_plain(number))


def _plain(number: Decimal) -> str:
    text = format(number, "f")
    return "0" if text in ("-0", "") else text


def _enum(text: str, enum_values: Sequence[str]) -> ParsedValue:
    wanted = _enum_key(text)
    for value in enum_values:
        if _enum_key(value) == wanted:
            return ParsedValue(value)
    return ParsedValue(None, f"not one of {', '.join(enum_values)}: {text!r}")


def _enum_key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.casefold())
