"""Dates in the many ways they are written, normalised to ISO 8601.

Accepted forms (separators `/`, `-`, `.`, and spaces between words): `14/03/2026`, `03-14-2026`,
`2026-03-14`, `14.03.26`, `20260314`, `14 Mar 2026`, `14-MAR-2026`, `14th March, 2026`, `March 14,
2026`, `Mar 14 2026`, `Saturday, 14 March 2026`, `2026 Mar 14`, month names in English, French,
German, Dutch, Spanish and Italian. All-numeric dates are read in the workflow's order (day first,
month first or year first); when that order gives an impossible date and another order gives a valid
one, the valid one is taken. A four-digit first number is always a year. Two-digit years are
2000-2069 for 00-69 and 1970-1999 for 70-99.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date

from docflow.extraction.definition import DateOrder

_MONTH_NAMES: dict[int, tuple[str, ...]] = {
    1: ("january", "jan", "janvier", "janv", "januar", "januari", "enero", "ene", "gennaio", "jän"),
    2: ("february", "feb", "fevrier", "fevr", "fev", "februar", "februari", "febrero", "febbraio"),
    3: ("march", "mar", "mars", "marz", "maart", "mrt", "marzo"),
    4: ("april", "apr", "avril", "avr", "abril", "abr", "aprile"),
    5: ("may", "mai", "mei", "mayo", "maggio", "mag"),
    6: ("june", "jun", "juin", "juni", "junio", "giugno", "giu"),
    7: ("july", "jul", "juillet", "juil", "juli", "julio", "luglio", "lug"),
    8: ("august", "aug", "aout", "augustus", "agosto", "ago"),
    9: ("september", "sep", "sept", "septembre", "septiembre", "settembre", "set"),
    10: ("october", "oct", "octobre", "oktober", "okt", "octubre", "ottobre", "ott"),
    11: ("november", "nov", "novembre", "noviembre"),
    12: ("december", "dec", "decembre", "dezember", "dez", "diciembre", "dicembre", "dic"),
}
MONTHS: dict[str, int] = {name: num for num, names in _MONTH_NAMES.items() for name in names}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_WEEKDAYS = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thu|"
    r"fri|sat|sun|lundi|mardi|mercredi|jeudi|"
    r"vendredi|samedi|dimanche|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag"
)

# Spaces do not separate all-numeric dates: "3 8 34" is three numbers far more often than a date.
_NUMERIC = re.compile(r"^(\d{1,4})([./\-])(\d{1,2})\2(\d{2,4})$")
_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_DAY_MONTH_YEAR = re.compile(rf"^(\d{{1,2}})[\s./\-]*({_MONTH})\.?[\s./\-]*(\d{{2,4}})$")
_MONTH_DAY_YEAR = re.compile(rf"^({_MONTH})\.?[\s./\-]*(\d{{1,2}})[\s./\-]+(\d{{4}}|\d{{2}})$")
_YEAR_MONTH_DAY = re.compile(rf"^(\d{{4}})[\s./\-]*({_MONTH})\.?[\s./\-]*(\d{{1,2}})$")


class DateError(ValueError):
    """The text is not a date in any accepted form."""


def parse_date(text: str, order: DateOrder = DateOrder.DAY_FIRST) -> date:
    """Parse `text` as a calendar date; `order` settles all-numeric ambiguity."""
    clean = _normalise(text)
    for parse in (_parse_numeric, _parse_textual):
        found = parse(clean, order)
        if found is not None:
            return found
    raise DateError(f"not a date: {text!r}")


def _normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    folded = re.sub(rf"^(?:{_WEEKDAYS})\b[,.]?\s*", "", folded.strip())
    folded = re.sub(r"(\d)(st|nd|rd|th|er)\b", r"\1", folded)
    folded = folded.replace(",", " ")
    folded = re.sub(r"\s*([./\-])\s*", r"\1", folded)  # OCR spaces around separators
    return re.sub(r"\s+", " ", folded).strip()


def _parse_numeric(clean: str, order: DateOrder) -> date | None:
    compact = _COMPACT.match(clean)
    if compact:
        return _make(*(int(g) for g in compact.groups()))
    match = _NUMERIC.match(clean)
    if not match:
        return None
    first, third = match.group(1), match.group(4)
    if len(first) == 4:
        return _make(int(first), int(match.group(3)), int(third)) if len(third) <= 2 else None
    if len(first) == 3:
        return None
    a, b, c = first, match.group(3), third
    orders = {
        DateOrder.DAY_FIRST: [(c, b, a), (c, a, b), (a, b, c)],
        DateOrder.MONTH_FIRST: [(c, a, b), (c, b, a), (a, b, c)],
        DateOrder.YEAR_FIRST: [(a, b, c), (c, b, a), (c, a, b)],
    }[order]
    for year, month, day in orders:
        found = _make(_full_year(int(year), len(year)), int(month), int(day))
        if found is not None:
            return found
    return None


def _parse_textual(clean: str, order: DateOrder) -> date | None:
    match = _DAY_MONTH_YEAR.match(clean)
    if match:
        day, month, year = match.groups()
        return _make(_full_year(int(year), len(year)), MONTHS[month], int(day))
    match = _MONTH_DAY_YEAR.match(clean)
    if match:
        month, day, year = match.groups()
        return _make(_full_year(int(year), len(year)), MONTHS[month], int(day))
    match = _YEAR_MONTH_DAY.match(clean)
    if match:
        year, month, day = match.groups()
        return _make(int(year), MONTHS[month], int(day))
    return None


def _full_year(year: int, digits: int) -> int:
    if digits > 2:
        return year
    return 2000 + year if year < 70 else 1900 + year


def _make(year: int, month: int, day: int) -> date | None:
    if not 1900 <= year <= 2100:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None
