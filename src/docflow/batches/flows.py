"""The batch flow (workflow id = batch id, on the batches queue) and the due-batches schedule.

Batch flow steps (names in the execution history):
1. `batch.begin`     find the tenant from the batch id, mark PROCESSING, fail documents that
                     never landed (`not_uploaded`), and enqueue one `docflow.document` flow per
                     document left (id `doc:{document_id}`, on the documents queue with the
                     tenant as partition key), all in one transaction: a repeat finds the flows
                     there and enqueues nothing twice
2. `batch.wait`      wait until every document is terminal (or, should one's flow have ended
                     without finishing it, until no flow of the batch is still running)
3. `batch.complete`  the batch status from the documents, recorded once (compare-and-set)
Enqueuing in bulk and waiting on the documents' own rows costs a few statements per batch,
where a child enqueue and a result wait per document cost a checkpoint each.

The schedule `due-batches` runs `docflow.due_batches` every minute; each tick is its own
workflow id (`sched-due-batches-<time>`), so two schedulers fire it once, and its steps are
idempotent anyway: `batch.reconcile_uploads` (S3 mode: files PUT without a confirmation are
recorded after a HEAD) and `batch.start_due` (expire late uploads, start due batches).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import structlog
from dbos import DBOS, DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow import runtime
from docflow.batches import steps, triggers
from docflow.batches.steps import BatchStart
from docflow.documents.flows import DOCUMENT_FLOW, flow_id
from docflow.documents.landing import reconcile_uploads
from docflow.retry import db_step
from docflow.runtime import DOCUMENTS_QUEUE, services

log = structlog.get_logger(__name__)

# `batch.wait` reads the batch's open documents as often as the queues are polled, and asks
# DBOS whether their flows still run this often.
_FLOW_CHECK_SECONDS = 10.0


@db_step("batch.begin")
def begin(batch_id: str) -> BatchStart:
    s = services()
    with s.write_session() as session, session.begin():
        start = steps.begin_batch(session, batch_id=batch_id)
        for document_id in start.document_ids:
            enqueue_document(session, s.client, start.tenant_id, document_id)
    return start


def enqueue_document(
    session: Session, client: DBOSClient, tenant_id: str, document_id: str
) -> None:
    """Enqueue the document's flow in the session's transaction (no-op if it exists)."""
    options: EnqueueOptions = {
        "workflow_name": DOCUMENT_FLOW,
        "queue_name": DOCUMENTS_QUEUE,
        "workflow_id": flow_id(document_id),
        "queue_partition_key": tenant_id,
    }
    client.enqueue_in_transaction(session, options, tenant_id, document_id)


@db_step("batch.wait")
def wait(tenant_id: str, batch_id: str) -> int:
    """Return once every document of the batch is terminal, or once none of the flows of
    those still open is running any more (`batch.complete` then fails them); how many were
    left open. Returns at once, unrecorded, when DBOS stops in this process."""
    s = services()
    next_flow_check = time.monotonic() + _FLOW_CHECK_SECONDS
    while True:
        with s.session_factory() as session:
            open_ids = steps.open_documents(session, tenant_id=tenant_id, batch_id=batch_id)
        if not open_ids:
            return 0
        if time.monotonic() >= next_flow_check:
            if not _running(s.client, open_ids):
                log.warning("batch.flows_ended_early", batch_id=batch_id, open=len(open_ids))
                return len(open_ids)
            next_flow_check = time.monotonic() + _FLOW_CHECK_SECONDS
        if runtime.wait_unless_stopped(s.settings.queue_polling_seconds):
            # DBOS has stopped: nothing can be recorded any more, and the process must be able
            # to exit. The batch flow resumes at this step when an executor launches again.
            return len(open_ids)


def _running(client: DBOSClient, document_ids: list[str]) -> bool:
    flows = client.list_workflows(
        workflow_ids=[flow_id(d) for d in document_ids],
        status=["PENDING", "ENQUEUED"],
        load_input=False,
        load_output=False,
    )
    return bool(flows)


@db_step("batch.complete")
def complete(tenant_id: str, batch_id: str) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.complete_batch(session, tenant_id=tenant_id, batch_id=batch_id)


@DBOS.workflow(name=triggers.BATCH_FLOW)
def batch_flow(batch_id: str) -> str:
    """Run every document of the batch and record its final status; returns that status."""
    start = begin(batch_id)
    if not start.tenant_id:
        return steps.GONE  # deleted (with its project) before it could start
    if not start.finished:
        wait(start.tenant_id, batch_id)
    return complete(start.tenant_id, batch_id)


@db_step("batch.start_due")
def start_due(now: datetime) -> list[str]:
    s = services()
    return triggers.start_due_batches(s.write_factory, s.client, now=now)


@db_step("batch.reconcile_uploads")
def reconcile() -> int:
    s = services()
    return reconcile_uploads(s.write_factory, s.storage, s.client)


@DBOS.workflow(name="docflow.due_batches")
def due_batches_tick(scheduled_at: datetime, context: Any) -> None:
    """One tick of the every-minute schedule: record unconfirmed S3 uploads, start due
    batches, expire late uploads."""
    reconcile()
    start_due(scheduled_at)
