"""Every CSV cell is formula-safe: text a spreadsheet could run as a formula (starting with `=`,
`+`, `-`, `@`, a tab or a carriage return) is written with a quote before it and quoted, as
OWASP recommends; a cell that is wholly a number (a negative amount) stays as it is; anything
else is written as the csv module writes it."""

from __future__ import annotations

import csv
import io

import pytest

from docflow.kit.csv_cells import csv_field, csv_line, neutralised

HOSTILE = [
    '=HYPERLINK("http://evil.example","x")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "-",
    "+",
    "-12.50 EUR",
    "=1",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_cell_that_could_be_a_formula_is_escaped_and_quoted(text: str) -> None:
    field = csv_field(text)
    assert field == '"' + ("'" + text).replace('"', '""') + '"'
    (row,) = csv.reader(io.StringIO(csv_line(["a", text, "b"])))
    assert row == ["a", "'" + text, "b"]


@pytest.mark.parametrize("number", ["-12.50", "+3", "-0.5", "-.5", "-1e3", "+1E-2", "-7"])
def test_a_cell_that_is_wholly_a_number_stays_a_number(number: str) -> None:
    assert neutralised(number) is None
    assert csv_field(number) == number


def test_other_cells_are_written_as_the_csv_module_writes_them() -> None:
    values = ["Acme, Inc.", 'say "hi"', "two\nlines", "", None, 3, -2.5, True, "x=1", "a-b"]
    expected = io.StringIO()
    csv.writer(expected).writerow(["" if v is None else v for v in values])
    assert csv_line(values) == expected.getvalue()
    assert csv_line([""], terminator="\n") == '""\n'
    assert csv_line([-12.5]) == "-12.5\r\n"  # a number, not text: never escaped
