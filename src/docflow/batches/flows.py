"""The batch flows (on the batches queue, with the tenant as partition key) and the due-batches
schedule. The step bodies are in `batches.steps`.

A batch's execution is two workflows, each enqueued in the transaction that causes it, with an
id that admits one run however often it is enqueued:
1. `docflow.batch` (id = batch id), enqueued by a start trigger (`batches.triggers`):
   `batch.begin` finds the tenant from the batch id, marks the batch PROCESSING, fails
   documents that never landed (`not_uploaded`), and enqueues one `docflow.document` flow per
   document left (id `doc:{document_id}`, on the documents queue), or the completion when none
   is left, all in one transaction: a repeat finds the flows there and enqueues nothing twice.
2. `docflow.batch_completion` (id `complete:{batch_id}`), enqueued by the transaction that
   counts the batch's last document (`batches.service.count_document`: the document flow's
   `document.persist` or `document.fail`, a document failed at begin, or one given up by the
   reconciler): `batch.complete` records the batch status from the documents, once
   (compare-and-set).
Nothing waits for the documents: no slot is held and no row is polled while they run.

The schedule `due-batches` runs `docflow.due_batches` every minute; each tick is its own
workflow id (`sched-due-batches-<time>`), so two schedulers fire it once, and its steps are
idempotent anyway: `batch.reconcile_uploads` (S3 mode: files PUT without a confirmation are
recorded after a HEAD) and `batch.start_due` (expire late uploads, start due batches).

The schedule `retention` runs `docflow.retention` every 15 minutes: `batch.retention` deletes
the terminal batches of projects with a `retention_days` created more than that many days
before the tick, at most `RETENTION_PAGE` per tick (`batches.steps.apply_retention`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dbos import DBOS, ScheduleInput

from docflow.batches import steps, triggers
from docflow.batches.service import COMPLETION_FLOW
from docflow.batches.steps import BatchStart
from docflow.config import Settings
from docflow.documents.uploads.service import reconcile_uploads
from docflow.runtime.context import BATCHES_QUEUE, Flows, Queue, services
from docflow.runtime.retry import db_step

DUE_BATCHES_SCHEDULE = "due-batches"
DUE_BATCHES_CRON = "* * * * *"
RETENTION_FLOW = "docflow.retention"
RETENTION_SCHEDULE = "retention"
RETENTION_CRON = "*/15 * * * *"
# Batches deleted per pass at most; a backlog goes on at the next pass.
RETENTION_PAGE = 200


@db_step("batch.begin")
def begin(batch_id: str) -> BatchStart:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.start_batch(session, s.client, s.settings, batch_id=batch_id)


@DBOS.workflow(name=triggers.BATCH_FLOW)
def batch_flow(batch_id: str) -> BatchStart:
    """Begin the batch's execution: its documents' flows are enqueued, or its completion."""
    return begin(batch_id)


@db_step("batch.complete")
def complete(tenant_id: str, batch_id: str) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.complete_batch(session, s.client, tenant_id=tenant_id, batch_id=batch_id)


@DBOS.workflow(name=COMPLETION_FLOW)
def completion_flow(tenant_id: str, batch_id: str) -> str:
    """Record the batch's final status from its documents, once; returns that status."""
    return complete(tenant_id, batch_id)


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


@db_step("batch.retention")
def retention(now: datetime) -> int:
    s = services()
    return steps.apply_retention(s.write_factory, s.storage, now=now, limit=RETENTION_PAGE)


@DBOS.workflow(name=RETENTION_FLOW)
def retention_tick(scheduled_at: datetime, context: Any) -> None:
    """One pass of the retention schedule, at the tick's own time (so a re-run of the tick
    deletes the same batches): the projects' expired batches, a page at a time."""
    retention(scheduled_at)


def _queues(settings: Settings) -> list[Queue]:
    """The batches queue, without a concurrency limit (its flows are a step or two each, and
    never take a slot of the documents queue). The scheduled workflows of every package run
    on it too."""
    return [Queue(BATCHES_QUEUE, polling_interval_sec=settings.queue_polling_seconds)]


def _schedules(settings: Settings) -> list[ScheduleInput]:
    due: ScheduleInput = {
        "schedule_name": DUE_BATCHES_SCHEDULE,
        "workflow_fn": due_batches_tick,
        "schedule": DUE_BATCHES_CRON,
        "context": None,
        "queue_name": BATCHES_QUEUE,
    }
    kept: ScheduleInput = {
        "schedule_name": RETENTION_SCHEDULE,
        "workflow_fn": retention_tick,
        "schedule": RETENTION_CRON,
        "context": None,
        "queue_name": BATCHES_QUEUE,
    }
    return [due, kept]


LAUNCH = Flows(queues=_queues, schedules=_schedules)
