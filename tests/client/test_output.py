"""Tables print whole ids on any terminal: a column holding an id never folds or cuts."""

from __future__ import annotations

import pytest
from rich.table import Table

from docflow.client.output import print_table


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
