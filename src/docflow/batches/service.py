"""Use cases for batches: accept one (batch, documents and project counters in one
transaction), read one, list them; the pipeline's way in from a bare batch id; and counting a
document's outcome, which enqueues the batch's completion when it was the last one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow.batches.events import batch_completed
from docflow.batches.models import TERMINAL_BATCH_STATUSES, Batch, BatchStatus
from docflow.batches.repository import (
    BatchFilter,
    BatchRepository,
    find_batch_tenant,
    find_due_batches,
)
from docflow.documents.models import Document, DocumentStatus
from docflow.errors import InvalidInput, LimitExceeded, get_one
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.observability import tracing
from docflow.projects.repository import ProjectRepository
from docflow.projects.service import get_project
from docflow.runtime.context import BATCHES_QUEUE
from docflow.tenancy import TenantContext
from docflow.workflows.service import WorkflowView, get_workflow

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class DocumentSpec:
    """A document the client declares before uploading it."""

    name: str
    content_type: str
    size: int


def _check_documents(
    documents: list[DocumentSpec], *, max_documents: int, max_document_bytes: int
) -> None:
    if not documents:
        raise InvalidInput("a batch needs at least one document", field="documents")
    if len(documents) > max_documents:
        raise LimitExceeded(
            f"a batch holds at most {max_documents} documents, got {len(documents)}",
            field="documents",
            max_documents=max_documents,
        )
    for i, doc in enumerate(documents):
        if not doc.name.strip() or len(doc.name) > 255:
            raise InvalidInput(
                "document name must be 1 to 255 characters", field=f"documents.{i}.name"
            )
        if not doc.content_type.strip() or len(doc.content_type) > 127:
            raise InvalidInput("content_type is required", field=f"documents.{i}.content_type")
        if doc.size < 0:
            raise InvalidInput("size must not be negative", field=f"documents.{i}.size")
        if doc.size > max_document_bytes:
            raise LimitExceeded(
                f"document {doc.name!r} declares {doc.size} bytes; the limit is "
                f"{max_document_bytes}",
                field=f"documents.{i}.size",
                max_bytes=max_document_bytes,
            )


def _check_time(value: datetime | None, field: str) -> None:
    if value is not None and value.tzinfo is None:
        raise InvalidInput("a time must carry its timezone", field=field)


def create_batch(
    session: Session,
    tenant: TenantContext,
    *,
    project_id: str,
    workflow_id: str,
    documents: list[DocumentSpec],
    scheduled_for: datetime | None,
    upload_deadline: datetime,
    max_documents: int,
    max_document_bytes: int,
    workflow_version: int | None = None,
) -> Batch:
    """Record a batch waiting for its uploads, with all its documents (PENDING_UPLOAD), pinned to
    the workflow's current version (or `workflow_version`), and count it in the project.

    Everything is written in the caller's transaction; `batch.documents` holds the documents in
    id order. NotFound for another tenant's project or workflow; LimitExceeded past the limits.
    """
    batch = record_batch(
        session,
        tenant,
        project_id=project_id,
        workflow_id=workflow_id,
        documents=documents,
        scheduled_for=scheduled_for,
        upload_deadline=upload_deadline,
        max_documents=max_documents,
        max_document_bytes=max_document_bytes,
        workflow_version=workflow_version,
    )
    count_batch(session, tenant, batch)
    return batch


def record_batch(
    session: Session,
    tenant: TenantContext,
    *,
    project_id: str,
    workflow_id: str,
    documents: list[DocumentSpec],
    scheduled_for: datetime | None,
    upload_deadline: datetime,
    max_documents: int,
    max_document_bytes: int,
    workflow_version: int | None = None,
) -> Batch:
    """`create_batch` without the project's counters: the caller counts the batch with
    `count_batch` in the same transaction, as its last write before the commit."""
    _check_documents(documents, max_documents=max_documents, max_document_bytes=max_document_bytes)
    _check_time(scheduled_for, "scheduled_for")
    _check_time(upload_deadline, "upload_deadline")
    workflow = _pinned_workflow(session, tenant, project_id, workflow_id, workflow_version)
    now = utcnow()
    batch = Batch(
        tenant_id=tenant.tenant_id,
        id=ids.new_id(ids.BATCH),
        project_id=project_id,
        workflow_id=workflow.id,
        workflow_version=workflow.version,
        status=BatchStatus.CREATED.value,
        document_count=len(documents),
        scheduled_for=scheduled_for,
        upload_deadline=upload_deadline,
        created_at=now,
        updated_at=now,
        documents=[_document(tenant.tenant_id, spec, workflow, now) for spec in documents],
        traceparent=tracing.traceparent(),
    )
    session.add(batch)
    session.flush()
    log.info(
        "batch.created",
        tenant_id=tenant.tenant_id,
        batch_id=batch.id,
        documents=len(documents),
        workflow_version=workflow.version,
    )
    return batch


def count_batch(session: Session, tenant: TenantContext, batch: Batch) -> None:
    """Add `batch` and its documents to its project's counters, in the caller's transaction.

    The update locks the project's row until the commit, so every other batch creation in that
    project waits for it: a caller doing more work in the transaction does this last.
    """
    ProjectRepository(session, tenant.tenant_id).add_counts(
        batch.project_id, batches=1, documents=batch.document_count, now=batch.created_at
    )


def _pinned_workflow(
    session: Session,
    tenant: TenantContext,
    project_id: str,
    workflow_id: str,
    version: int | None,
) -> WorkflowView:
    get_project(session, tenant, project_id=project_id)
    workflow = get_workflow(session, tenant, workflow_id=workflow_id, version=version)
    if workflow.project_id != project_id:
        raise InvalidInput("the workflow belongs to another project", field="workflow_id")
    return workflow


def _document(
    tenant_id: str, spec: DocumentSpec, workflow: WorkflowView, now: datetime
) -> Document:
    return Document(
        tenant_id=tenant_id,
        id=ids.new_id(ids.DOCUMENT),
        project_id=workflow.project_id,
        workflow_id=workflow.id,
        name=spec.name.strip(),
        content_type=spec.content_type.strip(),
        declared_size=spec.size,
        status=DocumentStatus.PENDING_UPLOAD.value,
        created_at=now,
        updated_at=now,
    )


def get_batch(session: Session, tenant: TenantContext, *, batch_id: str) -> Batch:
    """One of the tenant's batches; NotFound for a missing id or another tenant's."""
    return get_one(BatchRepository(session, tenant.tenant_id).get(batch_id), "batch")


def list_batches(
    session: Session,
    tenant: TenantContext,
    *,
    status: str | None = None,
    project_id: str | None = None,
    workflow_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None,
    limit: int,
) -> Page[Batch]:
    """The tenant's batches, newest first, kept by every condition given: in `status`, of a
    project or workflow, created at `since` or later and before `until`. An unknown id in a
    filter simply matches nothing (as for documents)."""
    if status is not None and status not in {s.value for s in BatchStatus}:
        raise InvalidInput(f"unknown batch status {status!r}", field="status")
    _check_time(since, "since")
    _check_time(until, "until")
    match = BatchFilter(
        status=status, project_id=project_id, workflow_id=workflow_id, since=since, until=until
    )
    return BatchRepository(session, tenant.tenant_id).page(match, cursor=cursor, limit=limit)


def batch_tenant(session: Session, *, batch_id: str) -> TenantContext:
    """The tenant context of a batch known only by id (the pipeline's entry point): look the
    tenant up across tenants, then everything else is read under it. NotFound if no such batch."""
    return TenantContext(tenant_id=get_one(find_batch_tenant(session, batch_id), "batch"))


def due_batches(
    session: Session, *, now: datetime, limit: int = 100
) -> list[tuple[TenantContext, str]]:
    """(tenant, batch id) of every tenant's waiting batches whose scheduled time or upload
    deadline has passed, for the scheduler to start (oldest id first)."""
    _check_time(now, "now")
    return [(TenantContext(tenant_id=t), b) for t, b in find_due_batches(session, now, limit)]


def batch_outcome(
    *, total: int, succeeded: int, review: int, failed: int, tolerated_failure_percent: float
) -> BatchStatus:
    """The status of a batch whose documents are all terminal.

    The failed share above `tolerated_failure_percent` → FAILED; otherwise any document needing
    review → REVIEW_REQUIRED (someone must act); otherwise any failure → PARTIALLY_FAILED;
    otherwise SUCCEEDED. An empty batch is SUCCEEDED.
    """
    if min(total, succeeded, review, failed) < 0 or succeeded + review + failed > total:
        raise ValueError("counts must be non-negative and add up to at most the total")
    if total == 0:
        return BatchStatus.SUCCEEDED
    if failed * 100 > tolerated_failure_percent * total:
        return BatchStatus.FAILED
    if review:
        return BatchStatus.REVIEW_REQUIRED
    if failed:
        return BatchStatus.PARTIALLY_FAILED
    return BatchStatus.SUCCEEDED


# The workflow that records a batch's completion (step `batch.complete`), one per batch.
COMPLETION_FLOW = "docflow.batch_completion"


def completion_id(batch_id: str) -> str:
    """The workflow id of a batch's completion: however often it is enqueued, it runs once."""
    return f"complete:{batch_id}"


def enqueue_completion(
    session: Session, client: DBOSClient, *, tenant_id: str, batch_id: str
) -> None:
    """Enqueue the batch's completion in the session's transaction (no-op if it exists)."""
    options: EnqueueOptions = {
        "workflow_name": COMPLETION_FLOW,
        "queue_name": BATCHES_QUEUE,
        "workflow_id": completion_id(batch_id),
        "queue_partition_key": tenant_id,
        "otel_context": tracing.current(),  # the last document's trace
    }
    client.enqueue_in_transaction(session, options, tenant_id, batch_id)


_COUNTERS = {
    DocumentStatus.SUCCEEDED.value: Batch.succeeded_count,
    DocumentStatus.REVIEW_REQUIRED.value: Batch.review_count,
    DocumentStatus.FAILED.value: Batch.failed_count,
}


def count_document(
    session: Session,
    client: DBOSClient,
    *,
    tenant_id: str,
    batch_id: str,
    status: str,
    now: datetime,
) -> None:
    """Count one of the batch's documents that reached the terminal `status`, in the caller's
    transaction (which also records that status, so each document is counted once). When it
    was the last document of a PROCESSING batch, the batch's completion is enqueued in the same
    transaction: it commits with the count, and a crash before the commit loses neither."""
    repo = BatchRepository(session, tenant_id)
    batch = get_one(repo.increment(batch_id, _COUNTERS[status], now=now), "batch")
    counted = batch.succeeded_count + batch.review_count + batch.failed_count
    if batch.status == BatchStatus.PROCESSING and counted >= batch.document_count:
        enqueue_completion(session, client, tenant_id=tenant_id, batch_id=batch_id)


def is_cancelled(session: Session, *, tenant_id: str, batch_id: str) -> bool:
    """Whether the batch was cancelled, read afresh (the document flow asks before it extracts
    and before it records an outcome)."""
    batch = BatchRepository(session, tenant_id).get(batch_id, fresh=True)
    return batch is not None and batch.status == BatchStatus.CANCELLED


def count_cancelled(session: Session, *, tenant_id: str, batch_id: str, now: datetime) -> None:
    """Count one of a cancelled batch's documents ended CANCELLED after the cancellation (see
    `documents.outcome.cancel_document`), in the caller's transaction."""
    get_one(
        BatchRepository(session, tenant_id).increment(batch_id, Batch.cancelled_count, now=now),
        "batch",
    )


def recount_document(
    session: Session,
    tenant: TenantContext,
    *,
    batch_id: str,
    was: str,
    status: str,
    now: datetime,
) -> Batch:
    """Move one of the batch's documents from the terminal status `was` to `status` in its
    counters (a person reviewed it), in the caller's transaction, which also records the
    document's new status; then settle the batch's status (`_settle`)."""
    repo = BatchRepository(session, tenant.tenant_id)
    moved = repo.move_count(batch_id, _COUNTERS[was], _COUNTERS[status], now=now)
    return _settle(session, tenant, get_one(moved, "batch"), now=now)


def uncount_document(
    session: Session,
    tenant: TenantContext,
    *,
    batch_id: str,
    status: str,
    uploaded: bool,
    now: datetime,
) -> Batch:
    """Take one of the batch's documents, in the terminal `status`, out of its counters (it
    is being deleted: `document_count`, its status's counter, `uploaded_count` when its file
    had landed), in the caller's transaction; then settle the batch's status (`_settle`)."""
    counter = _COUNTERS.get(status, Batch.cancelled_count)
    repo = BatchRepository(session, tenant.tenant_id)
    taken = repo.take_document(batch_id, counter, uploaded=uploaded, now=now)
    return _settle(session, tenant, get_one(taken, "batch"), now=now)


def _settle(session: Session, tenant: TenantContext, batch: Batch, *, now: datetime) -> Batch:
    """A batch whose counters just changed in this transaction: a batch already complete gets
    its status computed again by the same rule as at completion (`batch_outcome`); when that
    changes it, the new status is set and announced with `batch.completed` (its new status and
    counts). A batch still PROCESSING is left to its completion, which reads its documents'
    statuses then; a cancelled batch stays cancelled."""
    if batch.status not in TERMINAL_BATCH_STATUSES or batch.status == BatchStatus.CANCELLED:
        return batch
    definition = get_workflow(
        session, tenant, workflow_id=batch.workflow_id, version=batch.workflow_version
    ).definition
    outcome = batch_outcome(
        total=batch.document_count,
        succeeded=batch.succeeded_count,
        review=batch.review_count,
        failed=batch.failed_count,
        tolerated_failure_percent=definition.tolerated_failure_percent,
    )
    if outcome == batch.status:
        return batch
    # The counters' update holds the batch's row until the commit: no one changes it meanwhile.
    repo = BatchRepository(session, tenant.tenant_id)
    batch = get_one(repo.set_status(batch.id, outcome.value, now=now), "batch")
    log.info("batch.recomputed", tenant_id=tenant.tenant_id, batch_id=batch.id, status=outcome)
    batch_completed(session, batch)
    return batch
