"""The document flow: one DBOS workflow per document, `doc:{document_id}`, on the documents queue
(the shared one, or the queue of its tenant's plan: see `_queues`).

Steps (their names appear in the execution history):
1. `document.extract`  read the document and its file, mark it PROCESSING with the type found in
                       the first bytes, and run the engine with the batch's pinned definition
2. `document.gapfill`  only when a language model is configured and a field is weak: ask it
                       for those fields (cached, budgeted, recorded in the ledger; transient
                       provider errors retried inside the step), ground the answers, and decide
                       the status again (`llm.gapfill`)
3. `document.persist`  the terminal status by the workflow's thresholds, result (inline or a
                       storage reference), batch counter and outcome event, in one transaction;
                       the last document of its batch enqueues the batch's completion there
Two steps without a language model, because each step costs its checkpoint in the system
database: the engine's work sits between the two writes the document needs. Database and
storage errors retry with exponential backoff (`docflow.runtime.retry`; the steps are
idempotent); a file the engine rejects is a value, not an error, so it is never retried.
Anything else that escapes a step ends the document FAILED `internal_error` (step
`document.fail`) with a dead letter of consumer `documents` (`documents.service.fail_internal`):
the flow itself never fails, so neither does its batch nor the worker.
`docflow.documents.downstream_tick` (schedule `documents-downstream`, every
`DOWNSTREAM_PASS_SECONDS`): the periodic check of the documents whose search entry or webhook
delivery has lagged past `downstream_lag_seconds` since the last few ticks
(`documents.steps.downstream_pass`, at most `DOWNSTREAM_PASS_LIMIT` documents of each kind per
tick); the other checks happen where a projection moves (`documents.downstream.announce`).
The step bodies are in `documents.steps`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dbos import DBOS, ScheduleInput
from dbos._error import DBOSMaxStepRetriesExceeded

from docflow.config import Settings
from docflow.documents import steps
from docflow.documents.outcome import Extracted, Extraction
from docflow.documents.service import DOCUMENT_FLOW, REDRIVE_FLOW, fail_internal, flow_id
from docflow.documents.steps import Settled
from docflow.events.service import dead_letter_again
from docflow.kit.durable_json import error_kind
from docflow.quotas.service import plan_queue
from docflow.runtime.context import (
    BATCHES_QUEUE,
    DOCUMENTS_QUEUE,
    Flows,
    Queue,
    services,
    tenant_slots,
    worker_concurrency,
)
from docflow.runtime.retry import db_step

__all__ = [
    "DOCUMENT_FLOW",
    "REDRIVE_FLOW",
    "document_flow",
    "downstream_tick",
    "failure_kind",
    "failure_reason",
    "flow_id",
    "redrive_flow",
]


@db_step("document.extract")
def extract(tenant_id: str, document_id: str) -> Extraction | Settled:
    return steps.extract(services(), tenant_id=tenant_id, document_id=document_id)


@db_step("document.gapfill")
def gapfill(tenant_id: str, document_id: str, extraction: Extracted) -> Extracted:
    return steps.gapfill(
        services(), tenant_id=tenant_id, document_id=document_id, extraction=extraction
    )


@db_step("document.persist")
def persist(tenant_id: str, document_id: str, extraction: Extraction) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.persist(
            session,
            s.client,
            tenant_id=tenant_id,
            document_id=document_id,
            extraction=extraction,
            learning=s.settings.learning,
        )


@db_step("document.fail")
def fail(tenant_id: str, document_id: str, reason: str, category: str, attempts: int) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return fail_internal(
            session,
            s.client,
            tenant_id=tenant_id,
            document_id=document_id,
            reason=reason,
            category=category,
            attempts=attempts,
        )


@DBOS.workflow(name=DOCUMENT_FLOW)
def document_flow(tenant_id: str, document_id: str) -> str:
    """Process one document to a terminal status and return it; never raises for the
    document's sake (an unexpected error ends it FAILED `internal_error`)."""
    try:
        outcome = extract(tenant_id, document_id)
        if isinstance(outcome, Settled):
            return outcome.status
        if isinstance(outcome, Extracted) and outcome.gaps is not None:
            outcome = gapfill(tenant_id, document_id, outcome)
        return persist(tenant_id, document_id, outcome)
    except Exception as exc:  # one document's failure must not fail its batch
        category, attempts = failure_kind(exc)
        return fail(tenant_id, document_id, failure_reason(exc), category, attempts)


@db_step("document.rerun")
def rerun(tenant_id: str, document_id: str) -> Extraction | Settled:
    return steps.rerun(services(), tenant_id=tenant_id, document_id=document_id)


@db_step("document.revise")
def revise(tenant_id: str, document_id: str, extraction: Extraction) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.revise(
            session,
            tenant_id=tenant_id,
            document_id=document_id,
            extraction=extraction,
            learning=s.settings.learning,
        )


@db_step("document.redrive_failed")
def redrive_failed(
    tenant_id: str, letter_id: str, reason: str, category: str, attempts: int
) -> str:
    with services().write_session() as session, session.begin():
        return dead_letter_again(
            session,
            tenant_id=tenant_id,
            letter_id=letter_id,
            error=reason,
            category=category,
            attempts=attempts,
            workflow_id=DBOS.workflow_id or letter_id,
        )


@DBOS.workflow(name=REDRIVE_FLOW)
def redrive_flow(tenant_id: str, document_id: str, letter_id: str) -> str:
    """Run a document FAILED `internal_error` again for its redriven dead letter (id
    `doc:{document_id}:redrive:{letter_id}`, see `documents.service.redrive_document`): the
    engine again (`document.rerun`), the gap-fill when due, and the new outcome recorded as a
    revision (`document.revise`), so the document never leaves its terminal status and its
    batch's counts move with it. One that fails again stays FAILED with a new dead letter
    (`document.redrive_failed`); the document's status."""
    try:
        outcome = rerun(tenant_id, document_id)
        if isinstance(outcome, Settled):
            return outcome.status
        if isinstance(outcome, Extracted) and outcome.gaps is not None:
            outcome = gapfill(tenant_id, document_id, outcome)
        return revise(tenant_id, document_id, outcome)
    except Exception as exc:  # the document keeps its outcome
        category, attempts = failure_kind(exc)
        redrive_failed(tenant_id, letter_id, failure_reason(exc), category, attempts)
        return "FAILED"


def failure_reason(exc: Exception) -> str:
    """A readable reason for an unexpected error: where it happened and its kind, never its
    message (which may quote a document's content or a database row)."""
    if isinstance(exc, DBOSMaxStepRetriesExceeded):
        last = error_kind(exc.errors[-1]) if exc.errors else "unknown error"
        return f"{exc.step_name} still failed after {exc.max_retries} attempts ({last})"
    return f"processing failed: {error_kind(exc)}"


def failure_kind(exc: Exception) -> tuple[str, int]:
    """The category of an unexpected error (the kind of the last error) and how many times
    the step tried, for the document's dead letter."""
    if isinstance(exc, DBOSMaxStepRetriesExceeded):
        last = error_kind(exc.errors[-1]) if exc.errors else "unknown error"
        return last[:40], exc.max_retries
    return error_kind(exc)[:40], 1


def _queues(settings: Settings) -> list[Queue]:
    """The shared documents queue, and one queue per plan that bounds its tenants' running
    documents or reserves worker slots (`quotas.service.plan_queue`). On each: at most
    `max_concurrency` flows running across all executors; the shared queue has
    `worker_concurrency` slots (default: four per CPU) on every executor, a plan's queue its
    `reserved_slots` (or, reserving none, `worker_concurrency` too), so a plan's tenants never
    wait for another queue's documents; one tenant holds at most three quarters of a queue's
    slots on one executor and at most `concurrent_documents` across all of them (DBOS counts
    the running flows of the tenant's partition in the claim's transaction). OCR inside them
    is bounded by `ocr_concurrency`."""
    slots = worker_concurrency(settings)
    # Partitioned by tenant: partitions are visited in random order on each poll, so a tenant's
    # new work gets a slot as soon as one frees, whatever another tenant queued; and one tenant
    # never holds every slot of a worker, so another's first documents start on the next poll
    # instead of waiting for the big batch's documents to finish.
    queues = [_documents_queue(settings, DOCUMENTS_QUEUE, slots, None)]
    for name, plan in sorted(settings.plans.items()):
        if plan.own_queue:
            own = min(plan.reserved_slots, settings.max_concurrency) or slots
            queue = plan_queue(settings, name)
            queues.append(_documents_queue(settings, queue, own, plan.concurrent_documents))
    return queues


def _documents_queue(settings: Settings, name: str, slots: int, per_tenant: int | None) -> Queue:
    tenant = min(per_tenant or settings.max_concurrency, settings.max_concurrency)
    return Queue(
        name,
        polling_interval_sec=settings.queue_polling_seconds,
        global_concurrency=settings.max_concurrency,
        worker_concurrency=slots,
        partition_concurrency=tenant,
        partition_worker_concurrency=min(tenant_slots(slots), tenant),
    )


DOWNSTREAM_FLOW = "docflow.documents.downstream_tick"
DOWNSTREAM_SCHEDULE = "documents-downstream"
DOWNSTREAM_PASS_SECONDS = 15
# Each tick looks back over four ticks' worth of crossings, so a late or missed tick loses none.
DOWNSTREAM_WINDOW_SECONDS = 4 * DOWNSTREAM_PASS_SECONDS
DOWNSTREAM_PASS_LIMIT = 500


@db_step("documents.downstream")
def downstream_step(tick: datetime) -> int:
    s = services()
    return steps.downstream_pass(
        s.write_factory,
        lag_seconds=s.settings.downstream_lag_seconds,
        window_seconds=DOWNSTREAM_WINDOW_SECONDS,
        tick=tick,
        limit=DOWNSTREAM_PASS_LIMIT,
    )


@DBOS.workflow(name=DOWNSTREAM_FLOW)
def downstream_tick(scheduled_at: datetime, context: Any) -> None:
    """One tick of the downstream schedule: announce the documents gone DEGRADED by lag."""
    downstream_step(scheduled_at)


def _schedules(settings: Settings) -> list[ScheduleInput]:
    downstream: ScheduleInput = {
        "schedule_name": DOWNSTREAM_SCHEDULE,
        "workflow_fn": downstream_tick,
        "schedule": f"*/{DOWNSTREAM_PASS_SECONDS} * * * * *",
        "context": None,
        "queue_name": BATCHES_QUEUE,
    }
    return [downstream]


LAUNCH = Flows(queues=_queues, schedules=_schedules)
