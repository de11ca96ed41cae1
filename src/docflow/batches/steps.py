"""The bodies of the batch flows' steps and the batch status rule: plain, idempotent functions.

`start_batch` (step `batch.begin`) finds the batch's tenant from its id alone (the one
cross-tenant lookup) and everything after it reads under that tenant. Documents still waiting
for their file when the execution starts are FAILED with code `not_uploaded` (the start was
asked for: by the client, by `scheduled_for`, or after the upload deadline, when they were
already `upload_expired`). `complete_batch` (step `batch.complete`) runs once the last document
is counted (`batches.service.count_document` enqueues it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from dbos import DBOSClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches import lifecycle
from docflow.batches.events import batch_completed
from docflow.batches.models import TERMINAL_BATCH_STATUSES, Batch, BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.batches.service import batch_outcome, batch_tenant, enqueue_completion
from docflow.config import Settings
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import (
    INTERNAL_ERROR,
    NOT_UPLOADED,
    fail_document,
    fail_unfinished,
    start_processing,
    status_counts,
)
from docflow.errors import NotFound, get_one
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.projects.service import retention_projects
from docflow.quotas.service import documents_queue
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext, recorded_by_flow, until_set
from docflow.workflows.service import get_workflow

log = structlog.get_logger(__name__)

# What the batch flow returns for a batch deleted before its execution began.
GONE = "GONE"


@durable
@dataclass(frozen=True, slots=True)
class Started:
    """The batch is PROCESSING: its documents still to process (their flows are enqueued; when
    there are none, its completion is)."""

    tenant_id: str
    document_ids: tuple[str, ...]


@durable
@dataclass(frozen=True, slots=True)
class Finished:
    """The batch had already completed, with `status`."""

    tenant_id: str
    status: str


@durable
@dataclass(frozen=True, slots=True)
class Gone:
    """The batch was deleted (with its project) before its execution began."""

    batch_id: str


BatchStart = Started | Finished | Gone
"""What `begin_batch` found."""


def start_batch(
    session: Session, client: DBOSClient, settings: Settings, *, batch_id: str
) -> BatchStart:
    """Begin the batch (`begin_batch`) and enqueue, in the same transaction, its documents'
    flows (on the queue of the tenant's plan), or its completion when no document is left to
    process. The caller commits; a repeat finds the flows there and enqueues nothing twice."""
    start = begin_batch(session, client, batch_id=batch_id)
    if isinstance(start, Started):
        if start.document_ids:
            start_processing(
                session,
                client,
                tenant_id=start.tenant_id,
                document_ids=start.document_ids,
                queue=documents_queue(session, settings, start.tenant_id),
            )
        else:
            enqueue_completion(session, client, tenant_id=start.tenant_id, batch_id=batch_id)
    return start


def begin_batch(session: Session, client: DBOSClient, *, batch_id: str) -> BatchStart:
    """Mark the batch PROCESSING, fail its documents that never landed (`not_uploaded`), and
    list the documents left to process. The caller commits.

    The batch is locked and marked PROCESSING before its documents are read, as landing an
    upload locks it and requires it CREATED (`ingest.record_upload`): an upload recorded
    before this is processed, one in flight lands after it and is not recorded, so no
    document is both uploaded and failed `not_uploaded`."""
    try:
        tenant = batch_tenant(session, batch_id=batch_id)
    except NotFound:
        return Gone(batch_id)
    repo = BatchRepository(session, tenant.tenant_id)
    batch = get_one(repo.lock(batch_id), "batch")
    if batch.status in TERMINAL_BATCH_STATUSES:
        return Finished(tenant.tenant_id, batch.status)
    _set_status(repo, batch_id, BatchStatus.PROCESSING, started=True)
    pending: list[str] = []
    for document in DocumentRepository(session, tenant.tenant_id).in_batch(batch_id):
        if document.status == DocumentStatus.PENDING_UPLOAD:
            fail_document(
                session,
                client,
                tenant_id=tenant.tenant_id,
                document_id=document.id,
                code=NOT_UPLOADED,
                reason="the file was not uploaded before the batch started",
            )
        elif document.status not in TERMINAL_DOCUMENT_STATUSES:
            pending.append(document.id)
    log.info("batch.started", tenant_id=tenant.tenant_id, batch_id=batch_id, documents=len(pending))
    return Started(tenant.tenant_id, tuple(pending))


def _load(repo: BatchRepository, batch_id: str) -> Batch:
    return get_one(repo.get(batch_id), "batch")


def _set_status(
    repo: BatchRepository,
    batch_id: str,
    status: BatchStatus,
    *,
    started: bool = False,
) -> bool:
    """Move a non-terminal batch to `status` by compare-and-set; False if already terminal."""

    def attempt() -> bool | None:
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
        return repo.compare_and_set(batch_id, expected_version=batch.version, **values) or None

    return until_set(attempt, conflict="the batch kept changing while its status was set")


def complete_batch(session: Session, client: DBOSClient, *, tenant_id: str, batch_id: str) -> str:
    """Compute the batch's status from its documents and record the completion, once.

    A document somehow not terminal (it cannot be, once the last was counted) is FAILED
    `internal_error` first, so the batch never stays open. Returns the batch's status; a
    repeat returns the status recorded the first time. The caller commits.
    """
    repo = BatchRepository(session, tenant_id)
    batch = _load(repo, batch_id)
    if batch.status in TERMINAL_BATCH_STATUSES:
        return batch.status
    fail_unfinished(
        session,
        client,
        tenant_id=tenant_id,
        batch_id=batch_id,
        code=INTERNAL_ERROR,
        reason="the document's processing did not finish",
    )
    counts = status_counts(session, tenant_id=tenant_id, batch_id=batch_id)
    definition = get_workflow(
        session,
        TenantContext(tenant_id=recorded_by_flow(tenant_id)),
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
        batch_completed(session, batch)  # the outbox: same transaction
    return batch.status


def give_up(session: Session, client: DBOSClient, *, batch_id: str) -> str:
    """Complete a batch whose execution was given up on (see `docflow.reconciler`) from its
    documents, failing those not terminal; its status (GONE when it no longer exists). The
    caller commits."""
    try:
        tenant = batch_tenant(session, batch_id=batch_id)
    except NotFound:
        return GONE
    return complete_batch(session, client, tenant_id=tenant.tenant_id, batch_id=batch_id)


def apply_retention(
    write_factory: sessionmaker[Session], storage: Storage, *, now: datetime, limit: int
) -> int:
    """The retention schedule's pass at `now`: for every project with a `retention_days`,
    delete its terminal batches created more than that many days before `now`
    (`lifecycle.delete_expired_batch`: its documents, files, results, claims and reviews,
    audited), each batch in its own transaction with its files removed after the commit; at
    most `limit` batches per pass (the next pass goes on). A file another batch's document
    still uses (a re-run's) is kept. Safe to run twice. Returns how many batches went."""
    with write_factory() as session:
        projects = retention_projects(session, limit=limit)
    deleted = 0
    for retention in projects:
        tenant = TenantContext(tenant_id=retention.tenant_id)
        before = now - timedelta(days=retention.days)
        with write_factory() as session:
            found = lifecycle.expired_batches(
                session,
                tenant,
                project_id=retention.project_id,
                before=before,
                limit=limit - deleted,
            )
        for batch_id in found:
            with write_factory() as session, session.begin():
                keys = lifecycle.delete_expired_batch(session, tenant, batch_id=batch_id)
            lifecycle.remove_files(storage, keys)
            deleted += 1
        if deleted >= limit:
            break
    if deleted:
        log.info("retention.applied", batches=deleted)
    return deleted
