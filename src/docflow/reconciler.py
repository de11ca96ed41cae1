"""The reconciler: no durable workflow that carries work stays in ERROR.

Every step that touches the database retries transient errors (`docflow.retry`), so a workflow
ends in ERROR only when a step still failed after its retries or hit an unexpected error. The
schedule `workflows-reconcile` runs `docflow.reconcile` every `reconcile_interval_seconds`: it
lists the workflows in ERROR of the kinds that carry work (webhook deliveries, document flows,
batch flows and completions, event consumers) and for each one

- rewinds it (the same workflow id, run again from the step that failed, the steps before it
  kept) while it was rewound fewer than `reconcile_max_rewinds` times;
- past that, gives up on it through its kind's own failure path, so nothing waits forever: a
  webhook delivery is DEAD with a dead letter of category `internal` (`docflow dead-letters
  redrive` sends it again), an event consumer writes its dead letter (category `internal`), a
  document is FAILED `internal_error`, a batch is completed from its documents.

A document flow that ended without finishing its document (cancelled, or past DBOS's recovery
attempts) is given up on at once, so its batch still completes.

The rewinds and the giving up are recorded in the workflow's attributes (`docflow.rewinds`,
`docflow.gave_up`). `workflows_check` makes `/readyz` degraded while a workflow of these kinds
is in ERROR and not given up on.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import structlog
from dbos import DBOS, DBOSClient, ScheduleInput, WorkflowStatus
from dbos._error import DBOSException
from sqlalchemy.orm import Session, sessionmaker

from docflow import runtime
from docflow.batches import steps as batch_steps
from docflow.batches.service import COMPLETION_FLOW
from docflow.batches.triggers import BATCH_FLOW
from docflow.documents.service import DOCUMENT_FLOW, INTERNAL_ERROR, fail_document
from docflow.events.delivery import INTERNAL, add_dead_letter
from docflow.events.publisher import CONSUME_FLOW
from docflow.http.health import Degraded, ReadinessCheck
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import error_kind
from docflow.retry import GAVE_UP, db_step, failed, is_transient, rewind, rewinds
from docflow.webhooks import deliveries
from docflow.webhooks.flows import DELIVER_FLOW

log = structlog.get_logger(__name__)

RECONCILE_FLOW = "docflow.reconcile"
RECONCILE_SCHEDULE = "workflows-reconcile"
# At most this many failed workflows are handled per run; the next run takes the rest.
_PAGE = 100

GiveUp = Callable[[Session, DBOSClient, str, list[Any], str], None]
"""Settle the work of a failed workflow (id, input arguments, error text) in the session's
transaction, through its kind's own failure path (which may enqueue what follows it)."""


def _give_up_delivery(
    session: Session, client: DBOSClient, workflow_id: str, args: list[Any], error: str
) -> None:
    tenant_id, endpoint_id, event = args
    deliveries.give_up(
        session,
        tenant_id,
        endpoint_id=endpoint_id,
        event=event,
        error=error,
        workflow_id=workflow_id,
        now=utcnow(),
    )


def _give_up_consumer(
    session: Session, client: DBOSClient, workflow_id: str, args: list[Any], error: str
) -> None:
    consumer_name, raw = args
    add_dead_letter(
        session,
        consumer_name=consumer_name,
        raw=raw,
        error=error,
        category=INTERNAL,
        attempts=0,
        workflow_id=workflow_id,
    )


def _give_up_document(
    session: Session, client: DBOSClient, workflow_id: str, args: list[Any], error: str
) -> None:
    tenant_id, document_id = args
    reason = "the document's processing failed and was given up on"
    fail_document(
        session,
        client,
        tenant_id=tenant_id,
        document_id=document_id,
        code=INTERNAL_ERROR,
        reason=reason,
    )


def _give_up_batch(
    session: Session, client: DBOSClient, workflow_id: str, args: list[Any], error: str
) -> None:
    batch_id = args[-1]  # the start's (batch_id) or the completion's (tenant_id, batch_id)
    batch_steps.give_up(session, client, batch_id=batch_id)


GIVE_UP: dict[str, GiveUp] = {
    DELIVER_FLOW: _give_up_delivery,
    CONSUME_FLOW: _give_up_consumer,
    DOCUMENT_FLOW: _give_up_document,
    BATCH_FLOW: _give_up_batch,
    COMPLETION_FLOW: _give_up_batch,
}


def unresolved(client: DBOSClient) -> list[WorkflowStatus]:
    """The workflows of the reconciled kinds in ERROR and not given up on, oldest first
    (without their input and output)."""
    in_error = client.list_workflows(
        status="ERROR", name=list(GIVE_UP), load_input=False, load_output=False
    )
    return [w for w in in_error if not (w.attributes or {}).get(GAVE_UP)]


# A document flow may also end without finishing its document, and without an error: cancelled
# by an operator, or past DBOS's recovery attempts (a document that brings its worker down every
# time). Its batch completes only once every document is counted, so such a flow is given up at
# once (a rewind would only repeat it).
_ENDED_UNFINISHED = ["CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


def ended_documents(client: DBOSClient) -> list[WorkflowStatus]:
    """The document flows that ended without an outcome (`_ENDED_UNFINISHED`) and are not
    given up on, oldest first, with their input."""
    found = client.list_workflows(status=_ENDED_UNFINISHED, name=DOCUMENT_FLOW)
    return [w for w in found if not (w.attributes or {}).get(GAVE_UP)]


def reconcile(
    client: DBOSClient, write_factory: sessionmaker[Session], *, max_rewinds: int
) -> dict[str, int]:
    """Rewind or give up on every unresolved failed workflow (a page of them), and give up on
    the document flows that ended unfinished; how many of each. Safe to run twice or in two
    processes at once: a workflow rewound meanwhile is no longer in ERROR and is left alone."""
    rewound = gave_up = 0
    in_error = failed(client, [w.workflow_id for w in unresolved(client)[:_PAGE]])
    for status in in_error + ended_documents(client)[:_PAGE]:
        try:
            if status.status == "ERROR" and rewinds(status) < max_rewinds:
                rewind(client, status)
                rewound += 1
            else:
                _give_up(client, write_factory, status)
                gave_up += 1
        except DBOSException as exc:  # rewound or changed by another process meanwhile
            log.info("workflow.reconcile_skipped", workflow_id=status.workflow_id, error=str(exc))
        except Exception as exc:
            if is_transient(exc):
                raise  # the step's retry policy
            # One workflow that cannot be settled must not hold up the others; it stays
            # reported by /readyz and is tried again on the next run.
            log.error(
                "workflow.give_up_failed",
                workflow_id=status.workflow_id,
                error_type=type(exc).__name__,
            )
    return {"rewound": rewound, "gave_up": gave_up}


def _give_up(
    client: DBOSClient,
    write_factory: sessionmaker[Session],
    status: WorkflowStatus,
) -> None:
    # The error's kind, never its message: it may quote a database row.
    kind = error_kind(status.error) if status.error is not None else "unknown error"
    text = f"the workflow {status.name} failed after {rewinds(status)} rewinds ({kind})"
    args = list(status.input["args"]) if status.input else []
    with write_factory() as session, session.begin():
        GIVE_UP[status.name](session, client, status.workflow_id, args, text)
    client.update_workflow_attributes(status.workflow_id, {GAVE_UP: True}, merge=True)
    log.error(
        "workflow.given_up",
        workflow_id=status.workflow_id,
        workflow_name=status.name,
        rewinds=rewinds(status),
    )


@db_step("workflows.reconcile")
def reconcile_step(max_rewinds: int) -> dict[str, int]:
    s = runtime.services()
    return reconcile(s.client, s.write_factory, max_rewinds=max_rewinds)


@DBOS.workflow(name=RECONCILE_FLOW)
def reconcile_tick(scheduled_at: datetime, context: Any) -> None:
    """One run of the reconciler's schedule; `context` is `reconcile_max_rewinds`."""
    reconcile_step(int(context))


def reconcile_schedule(
    *, interval_seconds: int, max_rewinds: int, queue_name: str
) -> ScheduleInput:
    """The schedule entry of the reconciler, for `DBOS.apply_schedules`."""
    return {
        "schedule_name": RECONCILE_SCHEDULE,
        "workflow_fn": reconcile_tick,
        "schedule": f"*/{interval_seconds} * * * * *",
        "context": max_rewinds,
        "queue_name": queue_name,
    }


def workflows_check(client: DBOSClient) -> ReadinessCheck:
    """A readiness check raising `Degraded` while a workflow that carries work (a webhook
    delivery, a document, a batch, an event consumer) is in ERROR and not given up on: the
    reconciler rewinds it or gives up on it within `reconcile_interval_seconds`, so one that
    stays is a sign the reconciler is not running or the failure outlasts the rewinds."""

    def check() -> None:
        failed = unresolved(client)
        if failed:
            raise Degraded(f"{len(failed)} workflows in ERROR")

    return check
