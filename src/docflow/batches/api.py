"""Batches: `/v1/batches`."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from docflow.batches import diff, lifecycle, progress, rerun, service, triggers
from docflow.batches.models import Batch, BatchStatus
from docflow.batches.schemas import (
    BatchAccepted,
    BatchCreate,
    BatchDiffRead,
    BatchList,
    BatchRead,
    BatchRerunAccepted,
    DiffSummaryRead,
    DocumentDiffRead,
    RerunCreate,
    RerunDocument,
    RerunSkipped,
)
from docflow.config import Settings
from docflow.documents.api import document_upload
from docflow.documents.uploads.urls import upload_target
from docflow.http.deps import (
    ClientDep,
    IdQuery,
    PageDep,
    SessionDep,
    SettingsDep,
    SinceQuery,
    StorageDep,
    TenantDep,
    TenantReadsDep,
    UntilQuery,
    require_scope,
)
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE, PROBLEM_MEDIA_TYPE, Problem
from docflow.kit.clock import utcnow
from docflow.quotas import service as quotas
from docflow.storage.base import Storage

router = APIRouter(prefix="/batches", tags=["batches"], dependencies=[Depends(require_scope())])


def status_url(settings: Settings, batch_id: str) -> str:
    """The absolute URL where a batch's status is read."""
    return f"{settings.public_base_url.rstrip('/')}/v1/batches/{batch_id}"


def accepted_answer(
    batch: Batch, settings: Settings, storage: Storage | None = None
) -> BatchAccepted:
    """The 202 answer for a new batch: the batch, one upload target per document (see
    `documents.uploads.urls.upload_target`), its status URL."""
    now = utcnow()
    return BatchAccepted(
        **BatchRead.model_validate(batch).model_dump(),
        documents=[
            document_upload(
                d,
                upload_target(
                    d,
                    storage=storage,
                    secret=settings.signing_secret,
                    base_url=settings.public_base_url,
                    ttl_seconds=settings.upload_url_ttl_seconds,
                    deadline=batch.upload_deadline,
                    now=now,
                ),
            )
            for d in batch.documents
        ],
        status_url=status_url(settings, batch.id),
    )


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=BatchAccepted,
    responses={
        **CONFLICT_RESPONSE,
        413: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`limit_exceeded`: too many documents, or a document declared too "
            "large; "
            "`body_too_large`: the request body is larger than its limit",
        },
    },
)
def create_batch(
    body: BatchCreate,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    storage: StorageDep,
    idempotency: IdempotencyDep,
) -> Response:
    """Accept a batch: record it and its documents, answer with upload targets and a status URL."""
    created: list[Batch] = []

    def create() -> BatchAccepted:
        batch = service.record_batch(
            session,
            tenant,
            project_id=body.project_id,
            workflow_id=body.workflow_id,
            workflow_version=body.workflow_version,
            documents=[
                service.DocumentSpec(name=d.name, content_type=d.content_type, size=d.size)
                for d in body.documents
            ],
            scheduled_for=body.scheduled_for,
            upload_deadline=utcnow() + timedelta(seconds=settings.upload_deadline_seconds),
            max_documents=quotas.max_batch_documents(settings, plan),
            max_document_bytes=settings.max_document_bytes,
        )
        created.append(batch)
        return accepted_answer(batch, settings, storage)

    plan = settings.plan(quotas.plan_name(session, tenant.tenant_id))
    response = idempotency.respond(body, status_code=status.HTTP_202_ACCEPTED, create=create)
    # The counters last: their rows (the project's, the tenant's month) stay locked until the
    # commit, which follows the return at once, so concurrent creations wait for a commit, not
    # for the answer to be built and stored.
    for batch in created:
        service.count_batch(session, tenant, batch)
        quotas.charge_batch(session, tenant, documents=batch.document_count, plan=plan)
    return response


@router.post("/{batch_id}/start", status_code=status.HTTP_202_ACCEPTED, response_model=BatchRead)
def start_batch(
    batch_id: str, session: SessionDep, tenant: TenantDep, client: ClientDep
) -> BatchRead:
    """Start the batch now: documents without a file fail `not_uploaded`; one execution ever."""
    # However often it is called, the workflow id (the batch id) admits one execution; a batch
    # already started or finished is answered as it is.
    batch = triggers.request_start(session, client, tenant, batch_id=batch_id)
    return BatchRead.model_validate(batch)


@router.post(
    "/{batch_id}/cancel",
    response_model=BatchRead,
    responses={
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`batch_finished`: the batch is terminal already (cancelled included)",
        },
    },
)
def cancel_batch(batch_id: str, session: SessionDep, tenant: TenantDep) -> BatchRead:
    """Cancel a batch: its documents not yet done end CANCELLED and its execution stops."""
    # One transaction: the batch CANCELLED, its unfinished documents CANCELLED (code
    # `batch_cancelled`), the event `docflow.batch.cancelled.v1`. Documents already terminal
    # keep their outcome; late uploads are refused (409 `batch_cancelled`).
    return BatchRead.model_validate(lifecycle.cancel_batch(session, tenant, batch_id=batch_id))


@router.delete(
    "/{batch_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`batch_running`: the batch is not terminal (cancel it first)",
        },
    },
)
def delete_batch(
    batch_id: str,
    session: SessionDep,
    tenant: TenantDep,
    storage: StorageDep,
    background: BackgroundTasks,
) -> Response:
    """Delete a terminal batch with its documents, their results, reviews and stored files."""
    # A stored file a document of another batch still runs (a re-run shares its upload) is
    # kept. Files are removed once the deletion committed. Events stay as history.
    keys = lifecycle.delete_batch(session, tenant, batch_id=batch_id)
    background.add_task(lifecycle.remove_files, storage, keys)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{batch_id}", response_model=BatchRead)
def get_batch(batch_id: str, session: SessionDep, tenant: TenantDep) -> BatchRead:
    """Get a batch: its status and counters."""
    return BatchRead.model_validate(service.get_batch(session, tenant, batch_id=batch_id))


@router.get(
    "/{batch_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {progress.MEDIA_TYPE: {"schema": {"type": "string"}}},
            "description": "Server-Sent Events: `progress` (the batch as GET answers it) on "
            "every change, heartbeat comments, then `end` (terminal) or `timeout`",
        }
    },
)
async def batch_events(
    batch_id: str, tenant: TenantDep, reads: TenantReadsDep, settings: SettingsDep
) -> StreamingResponse:
    """Follow a batch's progress as Server-Sent Events until it is terminal."""
    read = progress.batch_reader(reads, tenant, batch_id)
    first = await run_in_threadpool(progress.first_snapshot, read)
    return StreamingResponse(
        progress.batch_events(read, stream_limits(settings), first=first),
        media_type=progress.MEDIA_TYPE,
        headers=progress.HEADERS,
    )


def stream_limits(settings: Settings) -> progress.StreamLimits:
    """The progress stream's bounds from the settings."""
    return progress.StreamLimits(
        poll_seconds=settings.events_stream_poll_seconds,
        heartbeat_seconds=settings.events_stream_heartbeat_seconds,
        max_seconds=settings.events_stream_max_seconds,
    )


@router.get("", response_model=BatchList)
def list_batches(
    session: SessionDep,
    tenant: TenantDep,
    page: PageDep,
    status_filter: Annotated[
        BatchStatus | None, Query(alias="status", description="only batches in this status")
    ] = None,
    project_id: IdQuery = None,
    workflow_id: IdQuery = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
) -> BatchList:
    """List the tenant's batches, newest first, by status, project, workflow, creation time."""
    result = service.list_batches(
        session,
        tenant,
        status=status_filter,
        project_id=project_id,
        workflow_id=workflow_id,
        since=since,
        until=until,
        cursor=page.cursor,
        limit=page.limit,
    )
    return BatchList(
        items=[BatchRead.model_validate(b) for b in result.items], next_cursor=result.next_cursor
    )


@router.post(
    "/{batch_id}/rerun",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=BatchRerunAccepted,
    responses={
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`batch_not_started`: the batch still takes uploads; "
            "`nothing_to_rerun`: none of its files landed; or an Idempotency-Key conflict",
        },
    },
)
def rerun_batch(
    batch_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    client: ClientDep,
    idempotency: IdempotencyDep,
    body: RerunCreate | None = None,
) -> Response:
    """Re-run a batch's stored files as a new batch against a version of its workflow."""
    # Same project and workflow, pinned to `workflow_version` (default: the current one; a
    # version the workflow lacks is a 422 naming it), over the same stored files (shared, not
    # copied), started at once. Documents whose file never landed are listed in `skipped`.
    request = body if body is not None else RerunCreate()
    created: list[Batch] = []

    def create() -> BatchRerunAccepted:
        done = rerun.record_rerun(
            session,
            client,
            tenant,
            batch_id=batch_id,
            workflow_version=request.workflow_version,
        )
        created.append(done.batch)
        return BatchRerunAccepted(
            **BatchRead.model_validate(done.batch).model_dump(),
            documents=[RerunDocument.model_validate(d) for d in done.batch.documents],
            skipped=[RerunSkipped.model_validate(d) for d in done.skipped],
            status_url=status_url(settings, done.batch.id),
        )

    plan = settings.plan(quotas.plan_name(session, tenant.tenant_id))
    response = idempotency.respond(request, status_code=status.HTTP_202_ACCEPTED, create=create)
    for batch in created:  # last, as for a new batch (see `create_batch`)
        service.count_batch(session, tenant, batch)
        quotas.charge_batch(session, tenant, documents=batch.document_count, plan=plan)
    return response


@router.get("/{batch_id}/diff", response_model=BatchDiffRead)
def diff_batches(
    batch_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    storage: StorageDep,
    page: PageDep,
    against: Annotated[
        str,
        Query(
            min_length=1,
            max_length=64,
            description="the other run of the same files (before); this batch is after",
        ),
    ],
) -> BatchDiffRead:
    """What changed between two runs of the same uploads, per document and field."""
    # Status, values and confidences before (`against`) and after (this batch); a 422
    # `batches_not_related` unless both run the same uploads. Pages through this batch's
    # documents; the summary covers the whole comparison and comes with the first page.
    found = diff.diff_batches(
        session,
        storage,
        tenant,
        batch_id=batch_id,
        against=against,
        cursor=page.cursor,
        limit=page.limit,
        max_result_bytes=settings.max_document_bytes,
    )
    return BatchDiffRead(
        batch_id=found.batch.id,
        against=found.against.id,
        summary=DiffSummaryRead.model_validate(found.summary) if found.summary else None,
        items=[DocumentDiffRead.model_validate(c) for c in found.items],
        next_cursor=found.next_cursor,
    )
