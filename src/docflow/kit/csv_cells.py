"""CSV lines whose cells a spreadsheet never runs as formulas: the one writer of every CSV
docflow produces (the batch and search exports, the console's results, the CLI's `-o csv`).

A cell holds tenant text (a file name, an extracted value). Opened in a spreadsheet, text that
starts with `=`, `+`, `-`, `@`, a tab or a carriage return may be read as a formula (CSV
injection). Such a cell is written as OWASP recommends: a single quote before the text, and the
field quoted (`"'=HYPERLINK(...)"`; read back, the text keeps its leading quote, which shows the
value was neutralised).

One exception keeps numbers usable: a cell whose whole text is a plain number (`-12.50`,
`+3`, `-1e3`) is written as it is. A spreadsheet reads it as that number, never as a formula,
and a negative amount stays a negative amount; anything more (`-1+2`, `-12.50 EUR`, `=1`) is
escaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# The first characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# A field holding one of these is quoted (the csv module's minimal quoting).
_SPECIAL = re.compile(r'[,"\r\n]')


def neutralised(text: str) -> str | None:
    """The text as a formula-safe cell (a quote before it) when a spreadsheet could read it as
    a formula; None when it is safe as it is (a plain number included)."""
    if not text.startswith(FORMULA_STARTS) or _NUMBER.fullmatch(text):
        return None
    return "'" + text


def csv_field(value: Any) -> str:
    """One field of a CSV line: None is empty, numbers as Python writes them, text escaped
    (`neutralised`) and quoted where needed."""
    if value is None:
        return ""
    text = str(value)
    if isinstance(value, str) and (safe := neutralised(text)) is not None:
        return _quoted(safe)
    return _quoted(text) if _SPECIAL.search(text) else text


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def csv_line(values: Iterable[Any], *, terminator: str = "\r\n") -> str:
    """A CSV line (RFC 4180 quoting, comma-separated) of these values, formula-safe."""
    fields = [csv_field(v) for v in values]
    if fields == [""]:
        fields = ['""']  # a line of one empty field is not an empty line
    return ",".join(fields) + terminator
