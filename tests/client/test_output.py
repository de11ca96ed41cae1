"""How the commands print: tables keep every id whole on any terminal (a column holding an id
never folds or cuts), and `-o csv` writes tenant values formula-safe (a cell a spreadsheet could
run as a formula gets a quote before it and is quoted; a negative amount stays a number)."""

from __future__ import annotations

import csv
import io

import pytest
from rich.table import Table

from docflow.client.output import Output, print_rows, print_table


def test_an_operator_table_at_80_columns_keeps_every_id_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    shown = Table("tenant", "documents", "missing", "stale", "orphaned", "written", "note")
    shown.add_row("ten_01m9zq8c4v7t2x5w3r6y8k0n1q", "12", "0", "1", "0", "1", "x " * 60)
    print_table(shown)
    printed = capsys.readouterr().out
    assert "ten_01m9zq8c4v7t2x5w3r6y8k0n1q" in printed
    assert "…" not in printed  # nothing is cut, the long note folds


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
