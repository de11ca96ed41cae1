"""The batch flow (workflow id = batch id, on the batches queue) and the due-batches schedule.

Batch flow steps (names in the execution history):
1. `batch.begin`     find the tenant from the batch id, mark PROCESSING, fail documents that
                     never landed (`not_uploaded`), list the documents to process
2. one child `docflow.document` per document, id `doc:{document_id}`, on the documents queue
   with the tenant as partition key (re-enqueueing an existing id returns the existing child,
   so a replayed batch never starts a document twice); then wait for each
3. `batch.complete`  the batch status from the documents, recorded once (compare-and-set)

The schedule `due-batches` runs `docflow.due_batches` every minute; each tick is its own
workflow id (`sched-due-batches-<time>`), so two schedulers fire it once, and its steps are
idempotent anyway: `batch.reconcile_uploads` (S3 mode: files PUT without a confirmation are
recorded after a HEAD) and `batch.start_due` (expire late uploads, start due batches).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog
from dbos import DBOS, SetEnqueueOptions, SetWorkflowID
from sqlalchemy.exc import OperationalError

from docflow.batches import execution, triggers
from docflow.batches.execution import BatchStart
from docflow.documents.flows import document_flow, flow_id
from docflow.documents.landing import reconcile_uploads
from docflow.runtime import DOCUMENTS_QUEUE, services

log = structlog.get_logger(__name__)

_RETRY: dict[str, Any] = {
    "retries_allowed": True,
    "max_attempts": 8,
    "interval_seconds": 0.5,
    "backoff_rate": 2.0,
    "should_retry": lambda exc: isinstance(exc, OperationalError | OSError),
}


@DBOS.step(name="batch.begin", **_RETRY)
def begin(batch_id: str) -> BatchStart:
    s = services()
    with s.write_session() as session, session.begin():
        return execution.begin_batch(session, batch_id=batch_id)


@DBOS.step(name="batch.complete", **_RETRY)
def complete(tenant_id: str, batch_id: str) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return execution.complete_batch(session, tenant_id=tenant_id, batch_id=batch_id)


@DBOS.workflow(name=triggers.BATCH_FLOW)
def batch_flow(batch_id: str) -> str:
    """Run every document of the batch and record its final status; returns that status."""
    start = begin(batch_id)
    if not start.tenant_id:
        return execution.GONE  # deleted (with its project) before it could start
    if start.finished:
        return complete(start.tenant_id, batch_id)
    handles = []
    for document_id in start.document_ids:
        with (
            SetWorkflowID(flow_id(document_id)),
            SetEnqueueOptions(queue_partition_key=start.tenant_id),
        ):
            handles.append(
                DBOS.enqueue_workflow(DOCUMENTS_QUEUE, document_flow, start.tenant_id, document_id)
            )
    for handle in handles:
        try:
            handle.get_result()
        except Exception as exc:
            # A document flow ends its document itself; if one ever failed instead,
            # `batch.complete` fails its still-open document.
            log.warning("batch.document_flow_failed", batch_id=batch_id, error=type(exc).__name__)
    return complete(start.tenant_id, batch_id)


@DBOS.step(name="batch.start_due", **_RETRY)
def start_due(now: datetime) -> list[str]:
    s = services()
    return triggers.start_due_batches(s.write_factory, s.client, now=now)


@DBOS.step(name="batch.reconcile_uploads", **_RETRY)
def reconcile() -> int:
    s = services()
    return reconcile_uploads(s.write_factory, s.storage, s.client)


@DBOS.workflow(name="docflow.due_batches")
def due_batches_tick(scheduled_at: datetime, context: Any) -> None:
    """One tick of the every-minute schedule: record unconfirmed S3 uploads, start due
    batches, expire late uploads."""
    reconcile()
    start_due(scheduled_at)
