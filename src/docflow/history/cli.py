"""`docflow inspect batch|document ID --tenant T`: a batch's or a document's execution history
as a table (or `--json`, the API's history answer)."""

from __future__ import annotations

from datetime import datetime

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docflow.cli_operator import open_operator
from docflow.client.output import print_table
from docflow.history.schemas import BatchHistory, DocumentHistory, ExecutionRead, StepRead
from docflow.history.service import batch_history, document_history

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
            escape(_errors(step)),
        )
        label = ""
    if not execution.steps:
        table.add_row(label, "", f"[dim]{execution.status.lower()}[/dim]", "", "", "", "", "")


def _errors(step: StepRead) -> str:
    """The step's final error, after the error of each retried attempt (`retried: A, B`)."""
    shown = [f"retried: {', '.join(step.retried_errors)}"] if step.retried_errors else []
    if step.error:
        shown.append(step.error)
    return "; ".join(shown)


def _table() -> Table:
    return Table("execution", "#", "step", "start", "duration", "attempt", "outcome", "error")


def history_table(history: BatchHistory) -> Table:
    """One row per step: the batch's execution first, its completion, then each document's."""
    table = _table()
    execution = history.execution
    _add_execution(table, f"batch {history.batch_id}", execution)
    if history.completion is not None:
        _add_execution(table, "completion", history.completion)
    for document in history.documents:
        _add_execution(table, _document_label(document), document.execution)
    return table


def _document_label(document: DocumentHistory) -> str:
    label = f"{escape(document.name)}\n{document.status}"
    if document.error_code:
        label += f" ({escape(document.error_code)})"
    return label


def _summary(history: BatchHistory) -> str:
    execution = history.execution
    if execution is None:
        return f"batch {history.batch_id}: {history.status}, not started"
    return (
        f"batch {history.batch_id}: {history.status}; execution {execution.status} on "
        f"{execution.executor_id}, started {execution.attempts} time(s)"
    )


def _document_summary(history: DocumentHistory) -> str:
    where = f"document {history.document_id} ({history.name}) of batch {history.batch_id}"
    status = history.status
    if history.error_code:
        status += f" ({history.error_code}: {history.error_reason or ''})"
    execution = history.execution
    if execution is None:
        return f"{where}: {status}, not started"
    ran = f"execution {execution.status} on {execution.executor_id}"
    ran += f", started {execution.attempts} time(s)"
    if execution.error:
        ran += f", ended with {execution.error}"
    return f"{where}: {status}; {ran}"


TenantOption = typer.Option(..., "--tenant", help="tenant id (ten_...)")
JsonOption = typer.Option(False, "--json", help="print the API's history answer as JSON")


@app.command("batch")
def inspect_batch(
    batch_id: str = typer.Argument(..., help="batch id (bat_...)"),
    tenant: str = TenantOption,
    as_json: bool = JsonOption,
) -> None:
    """Print every step of a batch's execution and of its documents' executions."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        history = batch_history(
            session, operator.client(), operator.tenant(tenant), batch_id=batch_id
        )
    if as_json:
        print(history.model_dump_json(indent=2))
        return
    Console(soft_wrap=True).print(escape(_summary(history)))
    print_table(history_table(history))


@app.command("document")
def inspect_document(
    document_id: str = typer.Argument(..., help="document id (doc_...)"),
    tenant: str = TenantOption,
    as_json: bool = JsonOption,
) -> None:
    """Print every step of a document's execution: when each ran, how long, its attempts (the
    errors of retried ones) and the error it ended with; and the document's status and reason."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        history = document_history(
            session, operator.client(), operator.tenant(tenant), document_id=document_id
        )
    if as_json:
        print(history.model_dump_json(indent=2))
        return
    table = _table()
    _add_execution(table, _document_label(history), history.execution)
    Console(soft_wrap=True).print(escape(_document_summary(history)))
    print_table(table)
