from __future__ import annotations

import pytest

from docflow.extraction.definition import FieldType
from docflow.extraction.fields import parse_value


@pytest.mark.parametrize(
    ("raw", "value"),
    [("42", "42"), ("1,234", "1234"), ("1.234", "1234"), ("-7", "-7"), ("  12 ", "12")],
)
def test_integer(raw: str, value: str) -> None:
    assert parse_value(FieldType.INTEGER, raw).value == value


@pytest.mark.parametrize("raw", ["12.5", "1,5", "abc", "", "3 apples"])
def test_integer_rejects(raw: str) -> None:
    parsed = parse_value(FieldType.INTEGER, raw)
    assert parsed.value is None and parsed.error


@pytest.mark.parametrize(
    ("raw", "value"),
    [("1.5", "1.5"), ("0,5", "0.5"), ("1,234.25", "1234.25"), ("-3.75", "-3.75"), ("10", "10")],
)
def test_decimal(raw: str, value: str) -> None:
    assert parse_value(FieldType.DECIMAL, raw).value == value


def test_decimal_rejects_text() -> None:
    assert not parse_value(FieldType.DECIMAL, "one point five").ok


def test_string_is_stripped_and_collapsed() -> None:
    assert parse_value(FieldType.STRING, "  Acme \n  Ltd ").value == "Acme Ltd"
    assert parse_value(FieldType.STRING, "   ").error == "empty value"


def test_enum_matches_case_and_space_insensitively() -> None:
    values = ["EUR", "USD", "Net 30"]
    assert parse_value(FieldType.ENUM, "eur", enum_values=values).value == "EUR"
    assert parse_value(FieldType.ENUM, "net30", enum_values=values).value == "Net 30"
    assert parse_value(FieldType.ENUM, "NET  30", enum_values=values).value == "Net 30"
    rejected = parse_value(FieldType.ENUM, "GBP", enum_values=values)
    assert rejected.value is None and "not one of" in (rejected.error or "")


def test_regex_must_match_fully() -> None:
    pattern = r"INV-\d{4}"
    assert parse_value(FieldType.REGEX, "INV-2026", pattern=pattern).value == "INV-2026"
    assert not parse_value(FieldType.REGEX, "INV-2026-X", pattern=pattern).ok
    assert not parse_value(FieldType.REGEX, "xINV-2026", pattern=pattern).ok


def test_line_items_have_no_scalar_value() -> None:
    assert not parse_value(FieldType.LINE_ITEMS, "anything").ok
