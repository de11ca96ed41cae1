"""Dates that OCR garbled right after their "Date" label, set right when only one reading fits.

Faded receipts lose a date to one wrong character: a separator read as a digit (`03/0272018`), a
digit too many (`17/097 2017`), one wrong digit that makes the date impossible (`21/88/2017`,
`30/09/2617`), or a speck glued to a month name (`14/fMay/2017`). These are repaired only where a
"Date" label stands right before them (the caller's job; a month name with a speck is distinctive
enough to be taken anywhere), and a repair is kept only when exactly one
one-digit change gives a possible date with a year from 1990 to 2039; ambiguity gives nothing.
"""

from __future__ import annotations

import re
from datetime import date

from docflow.extraction.definition import DateOrder
from docflow.extraction.fields.dates import MONTHS

_MONTH_NAME = "|".join(sorted(MONTHS, key=len, reverse=True))
_TEXTUAL = re.compile(rf"(\d{{1,2}})\W*[a-z]?({_MONTH_NAME})\W*[a-z]?\W*(\d{{4}})", re.IGNORECASE)
# day, month and year; a separator misread as one digit; a third digit in the middle group
_NUMERIC = re.compile(r"^(\d{1,2})[/.\-](\d{2})\d?\W{0,2}(\d{4})$")
_GLUED = re.compile(r"^(\d{1,2})[/.\-](\d{2})\d(\d{4})$")
YEARS = range(1990, 2040)


def repair_date(text: str, order: DateOrder) -> date | None:
    """The one date that `text` (the words after a "Date" label) can be read as, or None."""
    text = text.strip(" :;,.'’\"")
    textual = repair_textual(text)
    if textual is not None:
        return textual
    if order == DateOrder.YEAR_FIRST:
        return None
    token = re.sub(r"\s+", " ", text).split(" ")
    for size in (2, 1):
        joined = " ".join(token[:size])
        match = _GLUED.match(joined) or _NUMERIC.match(joined)
        if match:
            first, second, year = match.groups()
            day, month = (first, second) if order == DateOrder.DAY_FIRST else (second, first)
            return _one_fix(day.zfill(2), month, year)
    return None


def repair_textual(text: str) -> date | None:
    """A day, month name and four-digit year with a speck glued to the month ("14/fMay/2017");
    distinctive enough to be taken anywhere on the page."""
    textual = _TEXTUAL.search(text)
    if textual is None:
        return None
    day, month, year = textual.groups()
    return _valid(int(year), MONTHS[month.lower()], int(day))


def _one_fix(day: str, month: str, year: str) -> date | None:
    """The date itself when possible, else the only date one changed digit gives."""
    exact = _valid(int(year), int(month), int(day))
    if exact is not None:
        return exact
    digits = day + month + year
    found: set[date] = set()
    for i, old in enumerate(digits):
        for new in "0123456789":
            if new == old:
                continue
            fixed = digits[:i] + new + digits[i + 1 :]
            candidate = _valid(int(fixed[4:]), int(fixed[2:4]), int(fixed[:2]))
            if candidate is not None:
                found.add(candidate)
    return found.pop() if len(found) == 1 else None


def _valid(year: int, month: int, day: int) -> date | None:
    if year not in YEARS:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None
