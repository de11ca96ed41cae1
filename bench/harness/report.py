"""The table printed at the end of a run, and the results file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from bench.harness.scenario import Outcome
from bench.harness.stats import Figure


def _number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _spread(figure: Figure) -> str:
    if len(figure.values) < 2:
        return ""
    return f"{_number(min(figure.values))}–{_number(max(figure.values))}"


def _met(figure: Figure) -> str:
    if figure.met is None:
        return ""
    return "[green]met[/green]" if figure.met else "[red]missed[/red]"


def table(outcomes: dict[str, Outcome]) -> Table:
    """One row per figure: median, spread (min–max over repeats), target, met."""
    grid = Table(title="docflow benchmark", show_lines=False)
    for column in ("scenario", "figure", "median", "min–max", "unit", "target", "met"):
        grid.add_column(column, justify="right" if column in ("median", "min–max") else "left")
    for name, outcome in outcomes.items():
        first = True
        if outcome.error is not None:
            grid.add_row(name, "[red]error[/red]", "", "", "", "", outcome.error[:120])
            first = False
        for figure in outcome.figures.items.values():
            if not figure.values:
                continue
            grid.add_row(
                name if first else "",
                figure.label,
                _number(figure.median),
                _spread(figure),
                figure.unit,
                str(figure.target or ""),
                _met(figure),
            )
            first = False
        grid.add_section()
    return grid


def write_results(
    path: Path,
    facts: dict[str, Any],
    outcomes: dict[str, Outcome],
    *,
    order: tuple[str, ...],
    quick: bool,
    repeat: int,
) -> None:
    """Write the results file, scenarios in `order`; those already in it that this run did not
    measure are kept (so `--only` refreshes part of a day's results)."""
    previous: dict[str, Any] = {}
    if path.exists():
        try:
            previous = json.loads(path.read_text()).get("scenarios", {})
        except (json.JSONDecodeError, AttributeError):
            previous = {}
    measured = {**previous, **{name: o.to_json() for name, o in outcomes.items()}}
    for name in outcomes:
        measured[name]["about"]["measured_at"] = facts["measured_at"]
    scenarios = {name: measured[name] for name in order if name in measured}
    body = {**facts, "mode": "quick" if quick else "full", "repeat": repeat, "scenarios": scenarios}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2) + "\n")
