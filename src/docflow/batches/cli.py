"""`docflow batches rerun|diff`: re-run a tenant's batch against another workflow version, and
compare two runs of the same uploads (operator commands, scoped to `--tenant`)."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docflow.batches import diff, rerun
from docflow.batches.schemas import BatchDiffRead, DiffSummaryRead, DocumentDiffRead
from docflow.cli_operator import OPERATOR_PANEL, open_operator
from docflow.kit.pagination import MAX_LIMIT

app = typer.Typer(
    help="Batches: submit, list, show and read results through the HTTP API (remote); re-run "
    "and compare runs on the local database (operator).",
    no_args_is_help=True,
)

TenantOption = typer.Option(..., "--tenant", help="tenant id (ten_...)")


def _out() -> Console:
    return Console(soft_wrap=True)


@app.command("rerun", rich_help_panel=OPERATOR_PANEL)
def rerun_command(
    batch: str = typer.Argument(..., help="batch id (bat_...)"),
    tenant: str = TenantOption,
    version: int | None = typer.Option(
        None, "--version", min=1, help="workflow version; default: the current one"
    ),
) -> None:
    """Re-run a batch's stored files as a new batch, started at once; prints its id (operator:
    the local database, --tenant)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        done = rerun.rerun_batch(
            session,
            operator.client(),
            operator.tenant(tenant),
            batch_id=batch,
            workflow_version=version,
        )
        new_id, pinned = done.batch.id, done.batch.workflow_version
        count = done.batch.document_count
        skipped = [(d.id, d.name, d.error_code or d.status) for d in done.skipped]
    _out().print(
        f"batch [bold]{new_id}[/bold] re-runs {batch}: {count} documents, workflow version {pinned}"
    )
    for document_id, name, why in skipped:
        _out().print(f"skipped {document_id} ({escape(name)}): no stored file ({why})")


@app.command("diff", rich_help_panel=OPERATOR_PANEL)
def diff_command(
    batch: str = typer.Argument(..., help="batch id (bat_...): after"),
    against: str = typer.Option(..., "--against", help="the other run (bat_...): before"),
    tenant: str = TenantOption,
    as_json: bool = typer.Option(False, "--json", help="print the whole comparison as JSON"),
) -> None:
    """What changed from --against to BATCH, per document and field (operator: the local
    database, --tenant)."""
    pages: list[BatchDiffRead] = []
    with open_operator() as operator, operator.transaction(tenant) as session:
        storage = operator.storage()
        cursor: str | None = None
        while True:
            found = diff.diff_batches(
                session,
                storage,
                operator.tenant(tenant),
                batch_id=batch,
                against=against,
                cursor=cursor,
                limit=MAX_LIMIT,
                max_result_bytes=operator.settings.max_document_bytes,
            )
            pages.append(
                BatchDiffRead(
                    batch_id=found.batch.id,
                    against=found.against.id,
                    summary=DiffSummaryRead.model_validate(found.summary)
                    if found.summary
                    else None,
                    items=[DocumentDiffRead.model_validate(c) for c in found.items],
                    next_cursor=None,
                )
            )
            if found.next_cursor is None:
                break
            cursor = found.next_cursor
    items = [item for page in pages for item in page.items]
    summary = pages[0].summary
    if as_json:
        whole: dict[str, Any] = {
            "batch_id": batch,
            "against": against,
            "summary": summary.model_dump(mode="json") if summary else None,
            "items": [i.model_dump(mode="json") for i in items],
        }
        print(json.dumps(whole, indent=2, ensure_ascii=False))
        return
    _print_table(items, summary)


def _print_table(items: list[DocumentDiffRead], summary: DiffSummaryRead | None) -> None:
    table = Table("document", "field", "before", "after", "confidence", "changed")
    for item in items:
        table.add_row(
            escape(item.name),
            "(status)",
            item.status_before or "-",
            item.status_after or "-",
            "",
            _document_change(item),
        )
        for f in item.fields:
            table.add_row(
                "",
                escape(f.name),
                escape(_shown(f.value_before)),
                escape(_shown(f.value_after)),
                f"{_conf(f.confidence_before)} → {_conf(f.confidence_after)}",
                "yes" if f.changed else "",
            )
    _out().print(table)
    if summary is not None:
        _out().print(
            f"{summary.documents} documents ({summary.matched} in both), "
            f"{summary.statuses_changed} statuses changed, {summary.fields_changed} of "
            f"{summary.fields_compared} fields changed; confidence improved "
            f"{summary.confidence_improved}, worsened {summary.confidence_worsened}"
        )


def _document_change(item: DocumentDiffRead) -> str:
    if item.document_id is None:
        return "only before"
    if item.against_document_id is None:
        return "only after"
    return "yes" if item.status_changed else ""


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _conf(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
