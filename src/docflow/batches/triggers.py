"""A waiting batch: taking its documents' uploads, and starting its execution exactly once
from any of its three triggers.

An execution is the DBOS workflow `docflow.batch` with the batch id as its workflow id, enqueued
on the `batches` queue with the tenant as partition key, inside the caller's transaction
(`DBOSClient.enqueue_in_transaction`; the DBOS tables share the application's database). So the
start commits or rolls back with what caused it (the last upload landing, say), and however many
triggers fire, the workflow id admits one execution: a second enqueue of the id is a no-op.

The triggers:
- `start_if_ready`: after a document lands; starts when every document has landed (or failed)
  and the batch has no `scheduled_for` still in the future.
- `request_start`: `POST /v1/batches/{id}/start`; starts whatever has landed.
- `start_due_batches`: the every-minute schedule; fails documents past the upload deadline with
  `upload_expired`, and starts batches whose `scheduled_for` has come or whose deadline passed
  (unless `scheduled_for` is still ahead: a scheduled batch waits for its time).

A landing upload (`documents.uploads.service.record_upload`) holds the batch first
(`hold_for_upload`: locked, still CREATED), then counts its file (`count_upload`) and asks
`start_if_ready`, all in the landing's transaction.
"""

from __future__ import annotations

from datetime import datetime

import structlog
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches.models import Batch, BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.batches.service import due_batches
from docflow.documents.service import expire_uploads
from docflow.errors import get_one
from docflow.observability import tracing
from docflow.runtime.context import BATCHES_QUEUE
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

BATCH_FLOW = "docflow.batch"


def enqueue_execution(session: Session, client: DBOSClient, batch: Batch) -> None:
    """Enqueue the batch's execution in the session's transaction (no-op if it exists), in
    the trace of the request that created the batch (when traces are on)."""
    options: EnqueueOptions = {
        "workflow_name": BATCH_FLOW,
        "queue_name": BATCHES_QUEUE,
        "workflow_id": batch.id,
        "queue_partition_key": batch.tenant_id,
        # No application version: a version-less workflow runs on a worker of the latest
        # version, so an API deployed ahead of its workers never pins work to a version that
        # no worker runs yet.
    }
    parent = tracing.context_of(batch.traceparent)
    if parent is not None:
        options["otel_context"] = parent
    client.enqueue_in_transaction(session, options, batch.id)
    log.info("batch.start_requested", tenant_id=batch.tenant_id, batch_id=batch.id)


def _ready(batch: Batch, now: datetime) -> bool:
    landed = batch.uploaded_count + batch.failed_count >= batch.document_count
    waiting_for_time = batch.scheduled_for is not None and batch.scheduled_for > now
    return batch.status == BatchStatus.CREATED and landed and not waiting_for_time


def start_if_ready(
    session: Session, client: DBOSClient, *, tenant_id: str, batch_id: str, now: datetime
) -> bool:
    """Start the batch when all its documents have landed and it is not waiting for its
    `scheduled_for`; True when an execution was (or already had been) enqueued."""
    batch = get_one(BatchRepository(session, tenant_id).get(batch_id, fresh=True), "batch")
    if not _ready(batch, now):
        return False
    enqueue_execution(session, client, batch)
    return True


def hold_for_upload(session: Session, *, tenant_id: str, batch_id: str) -> bool:
    """Lock the batch until the transaction ends; True when it still takes uploads (CREATED).

    A landing upload takes this lock before it is recorded, as the batch's execution does when
    it begins and the scheduler before it expires uploads, so they serialise: an upload
    recorded first is processed, one arriving after finds the batch begun.
    """
    batch = BatchRepository(session, tenant_id).lock(batch_id)
    return batch is not None and batch.status == BatchStatus.CREATED


def count_upload(session: Session, *, tenant_id: str, batch_id: str, now: datetime) -> None:
    """Count one more landed file in the batch's `uploaded_count` (atomic, version bumped)."""
    BatchRepository(session, tenant_id).increment(batch_id, Batch.uploaded_count, now=now)


def request_start(
    session: Session, client: DBOSClient, tenant: TenantContext, *, batch_id: str
) -> Batch:
    """Start one of the tenant's batches now, whatever has landed (documents without a file
    will fail `not_uploaded`); a batch already started or finished is left as it is.
    NotFound for a missing batch or another tenant's."""
    batch = get_one(BatchRepository(session, tenant.tenant_id).get(batch_id), "batch")
    if batch.status == BatchStatus.CREATED:
        enqueue_execution(session, client, batch)
    return batch


def start_due_batches(
    session_factory: sessionmaker[Session], client: DBOSClient, *, now: datetime, limit: int = 100
) -> list[str]:
    """The scheduler's pass at `now`: for each waiting batch whose `scheduled_for` or upload
    deadline has passed, in its own transaction, expire the documents past the deadline and
    start the batch unless its `scheduled_for` is still ahead. Idempotent: a second pass for
    the same `now` changes nothing and starts nothing new. Returns the ids it started."""
    with session_factory() as session:
        due = due_batches(session, now=now, limit=limit)
    started: list[str] = []
    for tenant, batch_id in due:
        with session_factory() as session, session.begin():
            if _start_due(session, client, tenant.tenant_id, batch_id, now):
                started.append(batch_id)
    return started


def _start_due(
    session: Session, client: DBOSClient, tenant_id: str, batch_id: str, now: datetime
) -> bool:
    # Locked before expiring documents, as an upload landing locks it before recording one.
    batch = BatchRepository(session, tenant_id).lock(batch_id)
    if batch is None or batch.status != BatchStatus.CREATED:
        return False
    if batch.upload_deadline <= now:
        expired = expire_uploads(session, client, tenant_id=tenant_id, batch_id=batch_id)
        if expired:
            log.info("batch.uploads_expired", tenant_id=tenant_id, batch_id=batch_id, n=expired)
    if batch.scheduled_for is not None and batch.scheduled_for > now:
        return False
    enqueue_execution(session, client, batch)
    return True
