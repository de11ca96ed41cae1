"""A batch's results (or a search's matches) as a stream: `plan_batch_export` checks the batch
and reads which columns its pinned workflow version has (so the header is known before any
document is read), and `csv_chunks` / `jsonl_chunks` turn a page-by-page generator of
documents into text chunks, so a batch of any size streams in constant memory.

CSV: the documents' table (`kit.results`, the remote CLI's `batches results` columns), then
for each line-item table a section: an empty line, a line `[<table>]`, its header
`document_id,row,<columns>` and a line per row. JSON Lines: one object per document with
`fields` (name -> value) and `line_items` (table -> rows).
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy.orm import Session

from docflow.batches import service as batches
from docflow.documents import service as documents
from docflow.extraction.definition import FieldType
from docflow.kit import results
from docflow.kit.pagination import MAX_LIMIT
from docflow.search import service as search
from docflow.search.query import SearchQuery
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext
from docflow.workflows import service as workflows


class ExportFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"


MEDIA_TYPES = {ExportFormat.CSV: "text/csv; charset=utf-8", ExportFormat.JSONL: "application/jsonl"}


@dataclass(frozen=True)
class ExportPlan:
    """What an export holds: the batch, its scalar fields, its line-item tables' columns."""

    batch_id: str
    fields: list[str]
    tables: dict[str, list[str]]


def plan_batch_export(session: Session, tenant: TenantContext, *, batch_id: str) -> ExportPlan:
    """The columns of one of the tenant's batches' export, from the workflow version the batch
    pinned; NotFound for a missing id or another tenant's."""
    batch = batches.get_batch(session, tenant, batch_id=batch_id)
    view = workflows.get_workflow(
        session, tenant, workflow_id=batch.workflow_id, version=batch.workflow_version
    )
    fields = [f.name for f in view.definition.fields if f.type != FieldType.LINE_ITEMS]
    tables = {
        f.name: [c.name for c in f.columns]
        for f in view.definition.fields
        if f.type == FieldType.LINE_ITEMS
    }
    return ExportPlan(batch_id=batch.id, fields=fields, tables=tables)


def batch_details(
    open_session: Callable[[], Session],
    storage: Storage,
    tenant: TenantContext,
    plan: ExportPlan,
    *,
    max_result_bytes: int,
) -> Iterator[dict[str, Any]]:
    """The batch's documents as the API shows them (result included), a page at a time, each
    page read in a short session of its own."""
    cursor: str | None = None
    while True:
        with open_session() as session:
            page = documents.list_documents(
                session, tenant, batch_id=plan.batch_id, status=None, cursor=cursor, limit=MAX_LIMIT
            )
            for d in page.items:
                yield {
                    "id": d.id,
                    "name": d.name,
                    "status": d.status,
                    "confidence": d.confidence,
                    "error_code": d.error_code,
                    "result": documents.document_result(storage, d, max_bytes=max_result_bytes),
                }
        cursor = page.next_cursor
        if cursor is None:
            return


def _csv_line(values: list[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow(["" if v is None else v for v in values])
    return buffer.getvalue()


def csv_chunks(plan: ExportPlan, details: Iterator[dict[str, Any]]) -> Iterator[str]:
    """The CSV export: the documents' table, then one section per line-item table. The line
    items wait in a temporary file while the documents stream (never all in memory)."""
    yield _csv_line(results.columns(plan.fields))
    # In memory up to 1 MiB of line items, then on disk.
    with tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8") as spool:
        for detail in details:
            yield _csv_line(results.row(detail, plan.fields))
            for table, names in plan.tables.items():
                for r in results.line_item_rows(detail, table, names):
                    spool.write(json.dumps([table, r]) + "\n")
        for table, names in plan.tables.items():
            yield "\r\n" + _csv_line([f"[{table}]"]) + _csv_line(["document_id", "row", *names])
            spool.seek(0)
            for line in spool:
                name, values = json.loads(line)
                if name == table:
                    yield _csv_line(values)


def jsonl_chunks(plan: ExportPlan, details: Iterator[dict[str, Any]]) -> Iterator[str]:
    """The JSON Lines export: one object per document."""
    for detail in details:
        values = results.row(detail, plan.fields)
        head = dict(zip(results.DOCUMENT_COLUMNS, values, strict=False))
        tables = {
            table: [
                dict(zip(names, r[2:], strict=True))
                for r in results.line_item_rows(detail, table, names)
            ]
            for table, names in plan.tables.items()
        }
        fields = dict(zip(plan.fields, values[len(results.DOCUMENT_COLUMNS) :], strict=True))
        yield json.dumps({**head, "fields": fields, "line_items": tables}, default=str) + "\n"


def plan_search_export(
    session: Session, tenant: TenantContext, *, query: SearchQuery
) -> ExportPlan:
    """The columns of a search's export: every scalar field of the tenant's workflows (of the
    query's project), by name. InvalidInput for a field no workflow has, as the search."""
    names = workflows.field_names(session, tenant, project_id=query.project_id)
    query.check_fields(names)
    return ExportPlan(batch_id="", fields=sorted(names), tables={})


def search_details(
    open_session: Callable[[], Session], tenant: TenantContext, query: SearchQuery
) -> Iterator[dict[str, Any]]:
    """The search's matches as documents (their indexed values), a page at a time, each page
    read in a short session of its own."""
    cursor: str | None = None
    while True:
        with open_session() as session:
            page = search.search(session, tenant, query=query, cursor=cursor, limit=MAX_LIMIT)
        for hit in page.items:
            yield {
                "id": hit.document_id,
                "name": hit.name,
                "status": hit.status,
                "confidence": hit.confidence,
                "error_code": None,
                "result": {"fields": {n: {"value": v} for n, v in hit.fields.items()}},
            }
        cursor = page.next_cursor
        if cursor is None:
            return
