"""The bodies of the batch flow's steps and the batch status rule: plain, idempotent functions.

`begin_batch` finds the batch's tenant from its id alone (the one cross-tenant lookup) and
everything after it reads under that tenant. Documents still waiting for their file when the
execution starts are FAILED with code `not_uploaded` (the start was asked for: by the client,
by `scheduled_for`, or after the upload deadline, when they were already `upload_expired`).
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from sqlalchemy import func
from sqlalchemy.orm import Session

from docflow.batches.models import TERMINAL_BATCH_STATUSES, Batch, BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.batches.service import batch_tenant
from docflow.documents import steps as document_steps
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.errors import Conflict, NotFound
from docflow.events import emitters
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.tenancy import TenantContext
from docflow.workflows.service import get_workflow

log = structlog.get_logger(__name__)

_CAS_ATTEMPTS = 20
# What the batch flow returns for a batch deleted before its execution began.
GONE = "GONE"


@durable
@dataclass(frozen=True, slots=True)
class BatchStart:
    """The batch's tenant and the documents still to process (empty when already complete)."""

    tenant_id: str
    document_ids: tuple[str, ...]
    finished: bool = False


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


def begin_batch(session: Session, *, batch_id: str) -> BatchStart:
    """Mark the batch PROCESSING, fail its documents that never landed (`not_uploaded`), and
    list the documents left to process. The caller commits. A batch that no longer exists gives
    an empty tenant id and nothing to do.

    The batch is locked and marked PROCESSING before its documents are read, as landing an
    upload locks it and requires it CREATED (`ingest.record_upload`): an upload recorded
    before this is processed, one in flight lands after it and is not recorded, so no
    document is both uploaded and failed `not_uploaded`."""
    try:
        tenant = batch_tenant(session, batch_id=batch_id)
    except NotFound:
        return BatchStart("", (), finished=True)
    repo = BatchRepository(session, tenant.tenant_id)
    batch = repo.lock(batch_id)
    if batch is None:
        raise NotFound("batch not found")
    if batch.status in TERMINAL_BATCH_STATUSES:
        return BatchStart(tenant.tenant_id, (), finished=True)
    _set_status(repo, batch_id, BatchStatus.PROCESSING, started=True)
    pending: list[str] = []
    for document in DocumentRepository(session, tenant.tenant_id).in_batch(batch_id):
        if document.status == DocumentStatus.PENDING_UPLOAD:
            document_steps.decide_failure(
                session,
                tenant.tenant_id,
                document.id,
                document_steps.NOT_UPLOADED,
                "the file was not uploaded before the batch started",
            )
        elif document.status not in TERMINAL_DOCUMENT_STATUSES:
            pending.append(document.id)
    log.info("batch.started", tenant_id=tenant.tenant_id, batch_id=batch_id, documents=len(pending))
    return BatchStart(tenant.tenant_id, tuple(pending))


def _load(repo: BatchRepository, batch_id: str) -> Batch:
    batch = repo.get(batch_id)
    if batch is None:
        raise NotFound("batch not found")
    return batch


def _set_status(
    repo: BatchRepository,
    batch_id: str,
    status: BatchStatus,
    *,
    started: bool = False,
) -> bool:
    """Move a non-terminal batch to `status` by compare-and-set; False if already terminal."""
    for _ in range(_CAS_ATTEMPTS):
        batch = _load(repo, batch_id)
        repo.session.refresh(batch)
        if batch.status in TERMINAL_BATCH_STATUSES:
            return False
        if batch.status == status:
            return True
        now = utcnow()
        values: dict[str, object] = {"status": status.value, "updated_at": now}
        if started:
            values["started_at"] = batch.started_at or now
        if status in TERMINAL_BATCH_STATUSES:
            values["completed_at"] = now
        if repo.compare_and_set(batch_id, expected_version=batch.version, **values):
            return True
    raise Conflict("the batch kept changing while its status was set")


def complete_batch(session: Session, *, tenant_id: str, batch_id: str) -> str:
    """Compute the batch's status from its documents and record the completion, once.

    A document somehow not terminal (it cannot be, once every document flow has ended) is
    FAILED `internal_error` first, so the batch never stays open. Returns the batch's status;
    a repeat returns the status recorded the first time. The caller commits.
    """
    repo = BatchRepository(session, tenant_id)
    batch = _load(repo, batch_id)
    if batch.status in TERMINAL_BATCH_STATUSES:
        return batch.status
    _fail_unfinished(session, tenant_id, batch_id)
    counts = _status_counts(session, tenant_id, batch_id)
    definition = get_workflow(
        session,
        TenantContext(tenant_id=tenant_id),
        workflow_id=batch.workflow_id,
        version=batch.workflow_version,
    ).definition
    status = batch_outcome(
        total=batch.document_count,
        succeeded=counts.get(DocumentStatus.SUCCEEDED.value, 0),
        review=counts.get(DocumentStatus.REVIEW_REQUIRED.value, 0),
        failed=counts.get(DocumentStatus.FAILED.value, 0),
        tolerated_failure_percent=definition.tolerated_failure_percent,
    )
    won = _set_status(repo, batch_id, status)
    session.refresh(batch)
    if won:
        log.info("batch.completed", tenant_id=tenant_id, batch_id=batch_id, status=status.value)
        emitters.batch_completed(session, batch)  # the outbox: same transaction
    return batch.status


def give_up(session: Session, *, batch_id: str) -> str:
    """Complete a batch whose execution was given up on (see `docflow.reconciler`) from its
    documents, failing those not terminal; its status (GONE when it no longer exists). The
    caller commits."""
    try:
        tenant = batch_tenant(session, batch_id=batch_id)
    except NotFound:
        return GONE
    return complete_batch(session, tenant_id=tenant.tenant_id, batch_id=batch_id)


def _fail_unfinished(session: Session, tenant_id: str, batch_id: str) -> None:
    for document in DocumentRepository(session, tenant_id).in_batch(batch_id):
        if document.status not in TERMINAL_DOCUMENT_STATUSES:
            document_steps.decide_failure(
                session,
                tenant_id,
                document.id,
                document_steps.INTERNAL_ERROR,
                "the document's processing did not finish",
            )


def open_documents(session: Session, *, tenant_id: str, batch_id: str) -> list[str]:
    """The ids of the batch's documents not yet terminal (ix_documents_batch)."""
    repo = DocumentRepository(session, tenant_id)
    stmt = (
        repo.base(Document)
        .where(Document.batch_id == batch_id)
        .where(Document.status.not_in([s.value for s in TERMINAL_DOCUMENT_STATUSES]))
        .with_only_columns(Document.id)
    )
    return list(session.scalars(stmt))


def _status_counts(session: Session, tenant_id: str, batch_id: str) -> dict[str, int]:
    repo = DocumentRepository(session, tenant_id)
    stmt = (
        repo.base(Document)
        .where(Document.batch_id == batch_id)
        .with_only_columns(Document.status, func.count())
        .group_by(Document.status)
    )
    return {status: int(count) for status, count in session.execute(stmt).all()}


def expire_uploads(session: Session, *, tenant_id: str, batch_id: str) -> int:
    """Fail the batch's documents still waiting for their file with `upload_expired`; returns
    how many were waiting. Counted once each (a terminal document is left alone). The caller
    commits."""
    waiting = [
        d.id
        for d in DocumentRepository(session, tenant_id).in_batch(batch_id)
        if d.status == DocumentStatus.PENDING_UPLOAD
    ]
    for document_id in waiting:
        document_steps.decide_failure(
            session,
            tenant_id,
            document_id,
            document_steps.UPLOAD_EXPIRED,
            "the file was not uploaded before the upload deadline",
        )
    return len(waiting)
