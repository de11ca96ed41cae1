"""Normalised comparison of extracted values with labels, by field type.

Free text (string, regex, enum) compares case- and whitespace-insensitively (all whitespace is
ignored, so `NO.53,JALAN` equals `NO.53, JALAN` and `# BLR` equals `#BLR`); amounts (money,
decimal, integer) compare as numbers, so `327`, `327.0` and `327.00` are equal; dates compare as
ISO dates. A missing or blank value never equals a label.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from docflow.extraction.definition import ColumnDef, FieldType

_SPACE = re.compile(r"\s+")
NUMERIC_TYPES = frozenset({FieldType.MONEY, FieldType.DECIMAL, FieldType.INTEGER})
TEXT_TYPES = frozenset({FieldType.STRING, FieldType.REGEX, FieldType.ENUM})


def normalise(value: str | None, kind: FieldType) -> str | None:
    """The comparison key of `value` for a field of type `kind`; None when blank."""
    if value is None or not value.strip():
        return None
    text = _SPACE.sub(" ", value.strip())
    if kind in NUMERIC_TYPES:
        number = _as_decimal(text)
        return _text_key(text) if number is None else _plain(number)
    if kind == FieldType.DATE:
        try:
            return date.fromisoformat(text).isoformat()
        except ValueError:
            return _text_key(text)
    return _text_key(text)


def _text_key(text: str) -> str:
    return _SPACE.sub("", text).casefold()


def _as_decimal(text: str) -> Decimal | None:
    try:
        number = Decimal(text.replace(" ", ""))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _plain(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def similarity(expected: str | None, found: str | None) -> float:
    """0-1 closeness of two comparison keys (difflib ratio); 0 when either is missing."""
    if expected is None or found is None:
        return 0.0
    if expected == found:
        return 1.0
    return difflib.SequenceMatcher(None, expected, found, autojunk=False).ratio()


@dataclass(frozen=True, slots=True)
class Comparison:
    """One labelled field of one document: what was expected, what was found, and the verdict."""

    field: str
    expected: str
    found: str | None
    correct: bool
    similarity: float
    confidence: float | None = None  # the engine's confidence in `found`; None when not found


def compare_value(
    name: str, kind: FieldType, expected: str, found: str | None, confidence: float | None = None
) -> Comparison:
    want, got = normalise(expected, kind), normalise(found, kind)
    correct = want is not None and want == got
    closeness = 1.0 if correct else similarity(want, got)
    return Comparison(
        name, expected, found, correct, closeness, None if got is None else confidence
    )


def compare_rows(
    name: str,
    columns: Sequence[ColumnDef],
    expected: Sequence[Mapping[str, str]],
    found: Sequence[Mapping[str, str | None]] | None,
    confidence: float | None = None,
) -> Comparison:
    """Compare a line-item table row by row, in order.

    Correct only when the row counts agree and every labelled cell matches; the similarity is
    the share of labelled cells that match, where the cells of extra predicted rows count as
    unmatched.
    """
    kinds = {c.name: c.type for c in columns}
    rows = list(found or [])
    labelled = matched = 0
    for index, want in enumerate(expected):
        got = rows[index] if index < len(rows) else {}
        for column, value in want.items():
            if column not in kinds:
                continue
            labelled += 1
            kind = kinds[column]
            key = normalise(value, kind)
            matched += key is not None and key == normalise(got.get(column), kind)
    extra_cells = max(0, len(rows) - len(expected)) * max(1, len(kinds))
    share = matched / (labelled + extra_cells) if labelled + extra_cells else 0.0
    correct = labelled > 0 and matched == labelled and len(rows) == len(expected)
    summary = f"{len(expected)} rows"
    found_summary = None if found is None else f"{len(rows)} rows, {matched}/{labelled} cells"
    confidence = confidence if rows else None
    return Comparison(name, summary, found_summary, correct, share, confidence)
