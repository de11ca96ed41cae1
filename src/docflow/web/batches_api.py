"""Console pages of batches: the list with live progress bars, a batch's documents and
execution history, its results as CSV or JSON, and its progress stream (the same stream as
`GET /v1/batches/{id}/events`, authenticated by the session cookie)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.batches import progress
from docflow.batches import service as batches_service
from docflow.batches.api import stream_limits
from docflow.batches.models import TERMINAL_BATCH_STATUSES, BatchStatus
from docflow.batches.schemas import BatchRead
from docflow.client.cli import result_rows
from docflow.client.output import cell
from docflow.documents import service as documents_service
from docflow.documents.schemas import DocumentRead
from docflow.history import service as history_service
from docflow.http.deps import ClientDep, SessionDep, SettingsDep, StorageDep
from docflow.kit.csv_cells import csv_line
from docflow.kit.pagination import MAX_LIMIT
from docflow.tenancy import TenantContext
from docflow.web.auth_api import MemberDep, TemplatesDep, page

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 25
# A batch page lists this many documents (the API pages through more).
DOCUMENTS_SHOWN = MAX_LIMIT
# Progress streams the batch list opens at most (a browser keeps about six connections to one
# host: the page must keep some for itself).
LIVE_ROWS = 4


def percent(batch: BatchRead) -> int:
    """How much of the batch is done, 0-100."""
    done = batch.succeeded_count + batch.review_count + batch.failed_count + batch.cancelled_count
    return round(100 * done / batch.document_count) if batch.document_count else 100


@router.get("/batches", response_class=HTMLResponse)
def batches_page(
    request: Request,
    member: MemberDep,
    session: SessionDep,
    templates: TemplatesDep,
    status: Annotated[str | None, Query(max_length=32)] = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """The tenant's batches, newest first, the unfinished ones with a live progress bar
    (`status` empty: any status, as the filter's first choice sends it)."""
    found = batches_service.list_batches(
        session, member.tenant, status=status or None, cursor=cursor, limit=PAGE_SIZE
    )
    batches = [BatchRead.model_validate(b) for b in found.items]
    live = [b.id for b in batches if b.status not in TERMINAL_BATCH_STATUSES][:LIVE_ROWS]
    return page(
        templates,
        request,
        "batches.html",
        member,
        batches=batches,
        live=live,
        percent=percent,
        statuses=[s.value for s in BatchStatus],
        status=status or "",
        next_cursor=found.next_cursor,
    )


@router.get("/batches/{batch_id}", response_class=HTMLResponse)
def batch_page(
    batch_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    client: ClientDep,
    templates: TemplatesDep,
    reviewed: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    """A batch: its counters (live), documents with statuses and failures, execution history
    (`reviewed`: the document a review just decided, named in a notice)."""
    batch = BatchRead.model_validate(
        batches_service.get_batch(session, member.tenant, batch_id=batch_id)
    )
    documents = documents_service.list_documents(
        session, member.tenant, batch_id=batch_id, status=None, cursor=None, limit=DOCUMENTS_SHOWN
    )
    history = history_service.batch_history(session, client, member.tenant, batch_id=batch_id)
    return page(
        templates,
        request,
        "batch.html",
        member,
        batch=batch,
        documents=[DocumentRead.model_validate(d) for d in documents.items],
        more_documents=documents.next_cursor is not None,
        history=history,
        percent=percent,
        live=batch.status not in TERMINAL_BATCH_STATUSES,
        reviewed=reviewed,
    )


async def get_member_reads(request: Request, member: MemberDep) -> Callable[[], Session]:
    """Opens short read sessions bound to the member's tenant, apart from the request's (a
    stream outlives its request's transaction)."""
    factory: sessionmaker[Session] = request.app.state.session_factory

    def open_session() -> Session:
        session = factory()
        db.bind_tenant(session, member.tenant.tenant_id)
        return session

    return open_session


MemberReadsDep = Annotated[Callable[[], Session], Depends(get_member_reads)]


@router.get("/batches/{batch_id}/events")
async def batch_events(
    batch_id: str, member: MemberDep, reads: MemberReadsDep, settings: SettingsDep
) -> StreamingResponse:
    """The batch's progress stream (see `docflow.batches.progress`)."""
    read = progress.batch_reader(reads, member.tenant, batch_id)
    first = await run_in_threadpool(progress.first_snapshot, read)
    return StreamingResponse(
        progress.batch_events(read, stream_limits(settings), first=first),
        media_type=progress.MEDIA_TYPE,
        headers=progress.HEADERS,
    )


def _details(
    session: Session, tenant: TenantContext, storage: Any, batch_id: str, max_bytes: int
) -> list[dict[str, Any]]:
    """Every document of the batch as `GET /v1/documents/{id}` answers it (result included)."""
    details: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        found = documents_service.list_documents(
            session, tenant, batch_id=batch_id, status=None, cursor=cursor, limit=MAX_LIMIT
        )
        for document in found.items:
            result = documents_service.document_result(storage, document, max_bytes=max_bytes)
            details.append(DocumentRead.model_validate(document).model_dump(mode="json"))
            details[-1]["result"] = result
        if found.next_cursor is None:
            return details
        cursor = found.next_cursor


@router.get("/batches/{batch_id}/results.{extension}")
def batch_results(
    batch_id: str,
    extension: str,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
) -> Response:
    """The batch's results: CSV (one row per document, one column per field, as
    `docflow batches results -o csv`) or JSON (each document with its whole result)."""
    if extension not in ("csv", "json"):
        return Response(status_code=404)
    batches_service.get_batch(session, member.tenant, batch_id=batch_id)
    details = _details(session, member.tenant, storage, batch_id, settings.max_document_bytes)
    disposition = f'attachment; filename="{batch_id}-results.{extension}"'
    if extension == "json":
        body = json.dumps(details, indent=2, default=str)
        return Response(
            body, media_type="application/json", headers={"Content-Disposition": disposition}
        )
    columns, rows = result_rows(details)
    lines = [csv_line(columns, terminator="\n")]
    lines += [csv_line([cell(v) for v in row], terminator="\n") for row in rows]
    return Response(
        "".join(lines), media_type="text/csv", headers={"Content-Disposition": disposition}
    )
