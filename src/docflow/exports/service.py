"""A batch's results (or a search's matches) as a stream: `plan_batch_export` checks the batch
and reads which columns its pinned workflow version has (so the header is known before any
document is read), and `csv_chunks` / `jsonl_chunks` turn a page-by-page generator of
documents into text chunks, so a batch of any size streams in constant memory.

CSV: the documents' table (`kit.results`, the remote CLI's `batches results` columns), then
for each line-item table a section: an empty line, a line `[<table>]`, its header
`document_id,row,<columns>` and a line per row; a cell a spreadsheet could run as a formula is
escaped (`kit.csv_cells`). JSON Lines: one object per document with
`fields` (name -> value) and `line_items` (table -> rows). XLSX: a workbook whose first sheet
`documents` is the documents' table and with a sheet per line-item table (`document_id`, `row`,
its columns), written in openpyxl's write-only mode (rows go to disk as they come) to a
temporary file that is then streamed.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, Cell
from openpyxl.worksheet._write_only import WriteOnlyWorksheet
from sqlalchemy.orm import Session

from docflow.batches import service as batches
from docflow.documents import service as documents
from docflow.extraction.definition import FieldType
from docflow.kit import results
from docflow.kit.csv_cells import csv_line
from docflow.kit.pagination import MAX_LIMIT
from docflow.search import service as search
from docflow.search.query import SearchQuery
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext
from docflow.workflows import service as workflows


class ExportFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"
    XLSX = "xlsx"


MEDIA_TYPES = {
    ExportFormat.CSV: "text/csv; charset=utf-8",
    ExportFormat.JSONL: "application/jsonl",
    ExportFormat.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

# Excel's limit on a cell's text; longer values are cut there.
MAX_CELL_CHARS = 32_767
# The size of the pieces an xlsx file is streamed in.
STREAM_CHUNK_BYTES = 64 * 1024
# Normalised numbers (`extraction.fields.values`): digits, a sign, a point; nothing else (no
# exponent, `NaN` or `Infinity`, which Decimal would take).
_INTEGER = re.compile(r"-?\d{1,18}")
_DECIMAL = re.compile(r"-?\d{1,18}(?:\.\d{1,12})?")


@dataclass(frozen=True)
class ExportPlan:
    """What an export holds: the batch, its scalar fields, its line-item tables' columns, and
    the type of each field and column (`types`, by field name and by `<table>.<column>`; what
    is not there is text)."""

    batch_id: str
    fields: list[str]
    tables: dict[str, list[str]]
    types: dict[str, str] = field(default_factory=dict)

    def kinds(self) -> list[str | None]:
        """The type of each cell of a documents' row (its own columns are not fields)."""
        return [None] * len(results.DOCUMENT_COLUMNS) + [self.types.get(f) for f in self.fields]

    def table_kinds(self, table: str) -> list[str | None]:
        """The type of each cell of a line-item row (`document_id`, `row`, the columns)."""
        columns = self.tables[table]
        return [None, None, *(self.types.get(f"{table}.{c}") for c in columns)]


def plan_batch_export(session: Session, tenant: TenantContext, *, batch_id: str) -> ExportPlan:
    """The columns of one of the tenant's batches' export, from the workflow version the batch
    pinned; NotFound for a missing id or another tenant's."""
    batch = batches.get_batch(session, tenant, batch_id=batch_id)
    view = workflows.get_workflow(
        session, tenant, workflow_id=batch.workflow_id, version=batch.workflow_version
    )
    scalars = [f for f in view.definition.fields if f.type != FieldType.LINE_ITEMS]
    tables = [f for f in view.definition.fields if f.type == FieldType.LINE_ITEMS]
    types = {f.name: str(f.type) for f in scalars}
    types |= {f"{t.name}.{c.name}": str(c.type) for t in tables for c in t.columns}
    return ExportPlan(
        batch_id=batch.id,
        fields=[f.name for f in scalars],
        tables={t.name: [c.name for c in t.columns] for t in tables},
        types=types,
    )


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


def csv_chunks(plan: ExportPlan, details: Iterator[dict[str, Any]]) -> Iterator[str]:
    """The CSV export: the documents' table, then one section per line-item table. The line
    items wait in a temporary file while the documents stream (never all in memory)."""
    yield csv_line(results.columns(plan.fields))
    # In memory up to 1 MiB of line items, then on disk.
    with tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8") as spool:
        for detail in details:
            yield csv_line(results.row(detail, plan.fields))
            for table, names in plan.tables.items():
                for r in results.line_item_rows(detail, table, names):
                    spool.write(json.dumps([table, r]) + "\n")
        for table, names in plan.tables.items():
            yield "\r\n" + csv_line([f"[{table}]"]) + csv_line(["document_id", "row", *names])
            spool.seek(0)
            for line in spool:
                name, values = json.loads(line)
                if name == table:
                    yield csv_line(values)


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


def _xlsx_row(sheet: WriteOnlyWorksheet, values: list[Any], kinds: list[str | None]) -> list[Any]:
    """A row of cells: a value of a money, decimal or integer field a number, of a date field
    a date (`typed_cell`); other text always text (a value starting with `=` never becomes a
    formula), without the control characters the format refuses, and at most MAX_CELL_CHARS
    long."""
    cells: list[Any] = []
    for value, kind in zip(values, kinds, strict=True):
        if isinstance(value, str):
            typed = typed_cell(sheet, value, kind)
            if typed is None:
                typed = WriteOnlyCell(sheet, ILLEGAL_CHARACTERS_RE.sub("", value)[:MAX_CELL_CHARS])
                typed.data_type = "s"  # never "f" (formula) nor "e" (error) from the text
            cells.append(typed)
        elif value is None or isinstance(value, bool | int | float):
            cells.append(value)
        else:
            cells.append(str(value)[:MAX_CELL_CHARS])
    return cells


# The number format of a typed cell, by field type.
NUMBER_FORMATS = {
    FieldType.MONEY: "#,##0.00",
    FieldType.DECIMAL: "General",
    FieldType.INTEGER: "0",
    FieldType.DATE: "yyyy-mm-dd",
}


def typed_cell(sheet: WriteOnlyWorksheet, value: str, kind: str | None) -> Cell | None:
    """The normalised value of a field of type `kind` as a typed cell: a number for money,
    decimal and integer (`-12.50`), a date for date (`2026-01-31`), with the type's number
    format; None when the type is another or the text is not such a value (a reviewer's
    free text stays text)."""
    typed = _typed_value(value, kind)
    if typed is None or kind is None:
        return None
    cell: Cell = WriteOnlyCell(sheet, typed)
    cell.number_format = NUMBER_FORMATS[FieldType(kind)]
    return cell


def _typed_value(value: str, kind: str | None) -> float | int | datetime | None:
    if kind == FieldType.DATE:
        try:
            day = date.fromisoformat(value)
        except ValueError:
            return None
        return datetime(day.year, day.month, day.day)  # a calendar day: no time zone
    if kind == FieldType.INTEGER:
        return int(value) if _INTEGER.fullmatch(value) else None
    if kind in (FieldType.MONEY, FieldType.DECIMAL):
        return float(value) if _DECIMAL.fullmatch(value) else None
    return None


def _sheet_title(name: str, taken: set[str]) -> str:
    """A sheet's title for a line-item table: Excel's 31 characters without `[]:*?/\\`, made
    unique among the workbook's titles."""
    base = "".join("_" if c in "[]:*?/\\" else c for c in name)[:31] or "items"
    title, n = base, 1
    while title.lower() in taken:
        n += 1
        title = f"{base[: 31 - len(str(n)) - 1]}_{n}"
    taken.add(title.lower())
    return title


def xlsx_chunks(plan: ExportPlan, details: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    """The XLSX export: the documents' sheet and a sheet per line-item table, each row written
    to disk as it comes (openpyxl's write-only mode), the finished file then read back in
    STREAM_CHUNK_BYTES pieces; so neither the rows nor the file are ever all in memory."""
    book = Workbook(write_only=True)
    sheet = book.create_sheet("documents")
    taken = {"documents"}
    sheet.append(results.columns(plan.fields))
    kinds = plan.kinds()
    tables = {}
    for table, names in plan.tables.items():
        tables[table] = book.create_sheet(_sheet_title(table, taken))
        tables[table].append(["document_id", "row", *names])
    for detail in details:
        sheet.append(_xlsx_row(sheet, results.row(detail, plan.fields), kinds))
        for table, names in plan.tables.items():
            for r in results.line_item_rows(detail, table, names):
                tables[table].append(_xlsx_row(tables[table], r, plan.table_kinds(table)))
    with tempfile.TemporaryFile() as file:
        book.save(file)
        file.seek(0)
        while chunk := file.read(STREAM_CHUNK_BYTES):
            yield chunk


def export_bytes(
    export_format: ExportFormat, plan: ExportPlan, details: Iterator[dict[str, Any]]
) -> Iterator[bytes]:
    """The export in this format, as the bytes of the response."""
    if export_format == ExportFormat.XLSX:
        return xlsx_chunks(plan, details)
    chunks = (
        csv_chunks(plan, details)
        if export_format == ExportFormat.CSV
        else jsonl_chunks(plan, details)
    )
    return (c.encode() for c in chunks)


def plan_search_export(
    session: Session, tenant: TenantContext, *, query: SearchQuery
) -> ExportPlan:
    """The columns of a search's export: every scalar field of the tenant's workflows (of the
    query's project), by name. InvalidInput for a field no workflow has, as the search."""
    types = workflows.field_types(session, tenant, project_id=query.project_id)
    query.check_fields(frozenset(types))
    return ExportPlan(batch_id="", fields=sorted(types), tables={}, types=types)


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
