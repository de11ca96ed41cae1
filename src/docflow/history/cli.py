"""`docflow inspect batch ID --tenant T`: a batch's execution history as a table."""

from __future__ import annotations

from datetime import datetime

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docflow.cli_operator import open_operator
from docflow.history.schemas import BatchHistory, ExecutionRead
from docflow.history.service import batch_history

app = typer.Typer(help="Inspect executions.", no_args_is_help=True)

_OUTCOME_STYLE = {"succeeded": "green", "failed": "red", "running": "yellow"}


def _time(value: datetime | None) -> str:
    return f"{value:%H:%M:%S.%f}"[:-3] if value is not None else ""


def _add_execution(table: Table, label: str, execution: ExecutionRead | None) -> None:
    if execution is None:
        table.add_row(label, "", "[dim]not started[/dim]", "", "", "", "", "")
        return
    for step in execution.steps:
        style = _OUTCOME_STYLE[step.outcome]
        table.add_row(
            label,
            str(step.step),
            escape(step.name),
            _time(step.started_at),
            f"{step.duration_ms} ms" if step.duration_ms is not None else "",
            str(step.attempt),
            f"[{style}]{step.outcome}[/{style}]",
            escape(step.error or ""),
        )
        label = ""
    if not execution.steps:
        table.add_row(label, "", f"[dim]{execution.status.lower()}[/dim]", "", "", "", "", "")


def history_table(history: BatchHistory) -> Table:
    """One row per step: the batch's execution first, its completion, then each document's."""
    table = Table("execution", "#", "step", "start", "duration", "attempt", "outcome", "error")
    execution = history.execution
    _add_execution(table, f"batch {history.batch_id}", execution)
    if history.completion is not None:
        _add_execution(table, "completion", history.completion)
    for document in history.documents:
        label = f"{escape(document.name)}\n{document.status}"
        if document.error_code:
            label += f" ({escape(document.error_code)})"
        _add_execution(table, label, document.execution)
    return table


def _summary(history: BatchHistory) -> str:
    execution = history.execution
    if execution is None:
        return f"batch {history.batch_id}: {history.status}, not started"
    return (
        f"batch {history.batch_id}: {history.status}; execution {execution.status} on "
        f"{execution.executor_id}, started {execution.attempts} time(s)"
    )


@app.command("batch")
def inspect_batch(
    batch_id: str = typer.Argument(..., help="batch id (bat_...)"),
    tenant: str = typer.Option(..., "--tenant", help="tenant id (ten_...)"),
) -> None:
    """Print every step of a batch's execution and of its documents' executions."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        history = batch_history(
            session, operator.client(), operator.tenant(tenant), batch_id=batch_id
        )
    console = Console(soft_wrap=True)
    console.print(_summary(history))
    console.print(history_table(history))
