"""How the commands print: a table for people, JSON or CSV for programs, on stdout only
(progress and errors go to stderr). Tables never cut or fold an id: a column that holds one is
never wrapped, and the other cells fold onto new lines (`print_table`, used by every table)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docflow.kit.csv_cells import csv_line


class Output(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


OutputOption = typer.Option(Output.table, "--output", "-o", help="table, json or csv")
JsonOption = typer.Option(False, "--json", help="the same as --output json")


def chosen(output: Output, as_json: bool) -> Output:
    return Output.json if as_json else output


def out() -> Console:
    # Made per command so the terminal width (COLUMNS) is read when the command runs.
    return Console(soft_wrap=False)


# A prefixed identifier (`bat_` + 26 characters of a ULID), anywhere in a cell.
ID_IN_CELL = re.compile(r"\b[a-z]{2,5}_[0-9a-z]{26}\b")


def print_table(shown: Table) -> None:
    """Print `shown` on stdout at least as wide as its ids need: a column holding an id is never
    wrapped, a narrow terminal folds the other cells, then wraps the lines, but never cuts an id."""
    for column in shown.columns:
        if any(ID_IN_CELL.search(str(value)) for value in column.cells):
            column.no_wrap = True
        else:
            column.overflow = "fold"
    console = out()
    needed = Console(width=100_000).measure(shown).minimum
    if needed > console.width:
        console = Console(soft_wrap=False, width=needed)
    console.print(shown)


def err() -> Console:
    return Console(stderr=True, soft_wrap=True)


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """CSV on stdout, formula-safe (`kit.csv_cells`): cells hold tenant text."""
    sys.stdout.write(csv_line(columns, terminator="\n"))
    for row in rows:
        sys.stdout.write(csv_line([cell(value) for value in row], terminator="\n"))
    sys.stdout.flush()


def table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None
) -> Table:
    shown = Table(title=title, title_justify="left")
    for column in columns:
        if column == "id" or column.endswith("_id"):
            shown.add_column(column, no_wrap=True)
        else:
            shown.add_column(column, overflow="fold")
    for row in rows:
        shown.add_row(*(escape(cell(value)) for value in row))
    return shown


def print_rows(
    output: Output,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    data: Any,
    *,
    title: str | None = None,
) -> None:
    """`rows` under `columns` as a table or CSV, or `data` as JSON."""
    if output is Output.json:
        print_json(data)
    elif output is Output.csv:
        print_csv(columns, rows)
    else:
        print_table(table(columns, rows, title=title))


def print_object(output: Output, pairs: Sequence[tuple[str, Any]], data: Any) -> None:
    """One object: a two-column table of its members, one CSV row, or `data` as JSON."""
    if output is Output.json:
        print_json(data)
    elif output is Output.csv:
        print_csv([name for name, _ in pairs], [[value for _, value in pairs]])
    else:
        shown = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
        shown.add_column(style="bold", no_wrap=True)
        shown.add_column(no_wrap=True)
        for name, value in pairs:
            shown.add_row(name, escape(cell(value)))
        print_table(shown)
