"""The remote commands' `-o csv` writes tenant values (names, extracted values) formula-safe:
a cell a spreadsheet could run as a formula gets a quote before it and is quoted; a negative
amount stays a number."""

from __future__ import annotations

import csv
import io

import pytest

from docflow.client.output import Output, print_rows


def test_csv_output_escapes_formulas_and_keeps_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [["doc_1", "@SUM(1+1)*cmd|' /C calc'!A0", "-12.50", 0.5, None]]
    print_rows(Output.csv, ["id", "name", "total", "confidence", "error"], rows, [])
    printed = capsys.readouterr().out
    assert "\"'@SUM(1+1)*cmd|' /C calc'!A0\"" in printed
    (row,) = csv.DictReader(io.StringIO(printed))
    assert row == {
        "id": "doc_1",
        "name": "'@SUM(1+1)*cmd|' /C calc'!A0",
        "total": "-12.50",
        "confidence": "0.5",
        "error": "",
    }
