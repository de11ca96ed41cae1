"""The reconciler's step body (`reconcile`): rewind, or give up on, the workflows that carry
work and ended in ERROR (see the package's docstring). Each kind gives up through its own
failure path, in one transaction with the workflow marked as given up on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from dbos import DBOSClient, WorkflowStatus
from dbos._error import DBOSException
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches import steps as batch_steps
from docflow.batches.service import COMPLETION_FLOW
from docflow.batches.triggers import BATCH_FLOW
from docflow.documents.service import DOCUMENT_FLOW, REDRIVE_FLOW, fail_internal
from docflow.events.publisher import CONSUME_FLOW
from docflow.events.service import INTERNAL, add_dead_letter, dead_letter_again
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import error_kind
from docflow.runtime.retry import GAVE_UP, failed, is_transient, rewind, rewinds
from docflow.webhooks import steps as webhook_steps
from docflow.webhooks.jobs import DELIVER_FLOW

log = structlog.get_logger(__name__)

# At most this many failed workflows are handled per run; the next run takes the rest.
_PAGE = 100


@dataclass(frozen=True)
class Failed:
    """A failed workflow given up on: its id, input arguments and error text, and the setting
    a settled delivery's document is checked with (`downstream_lag_seconds`)."""

    workflow_id: str
    args: list[Any]
    error: str
    downstream_lag_seconds: float


GiveUp = Callable[[Session, DBOSClient, Failed], None]
"""Settle the work of a failed workflow in the session's transaction, through its kind's own
failure path (which may enqueue what follows it)."""


def _give_up_delivery(session: Session, client: DBOSClient, failed: Failed) -> None:
    tenant_id, endpoint_id, event = failed.args
    webhook_steps.give_up(
        session,
        tenant_id,
        endpoint_id=endpoint_id,
        event=event,
        error=failed.error,
        workflow_id=failed.workflow_id,
        lag_seconds=failed.downstream_lag_seconds,
        now=utcnow(),
    )


def _give_up_consumer(session: Session, client: DBOSClient, failed: Failed) -> None:
    consumer_name, raw = failed.args
    add_dead_letter(
        session,
        consumer_name=consumer_name,
        raw=raw,
        error=failed.error,
        category=INTERNAL,
        attempts=0,
        workflow_id=failed.workflow_id,
    )


def _give_up_document(session: Session, client: DBOSClient, failed: Failed) -> None:
    tenant_id, document_id = failed.args
    reason = "the document's processing failed and was given up on"
    fail_internal(
        session,
        client,
        tenant_id=tenant_id,
        document_id=document_id,
        reason=reason,
        error=failed.error,
        category=INTERNAL,
        attempts=0,
    )


def _give_up_redrive(session: Session, client: DBOSClient, failed: Failed) -> None:
    tenant_id, _document_id, letter_id = failed.args  # the document keeps its outcome
    dead_letter_again(
        session,
        tenant_id=tenant_id,
        letter_id=letter_id,
        error=failed.error,
        category=INTERNAL,
        attempts=0,
        workflow_id=failed.workflow_id,
    )


def _give_up_batch(session: Session, client: DBOSClient, failed: Failed) -> None:
    # The start's (batch_id) or the completion's (tenant_id, batch_id).
    batch_id = failed.args[-1]
    batch_steps.give_up(session, client, batch_id=batch_id)


GIVE_UP: dict[str, GiveUp] = {
    DELIVER_FLOW: _give_up_delivery,
    CONSUME_FLOW: _give_up_consumer,
    DOCUMENT_FLOW: _give_up_document,
    REDRIVE_FLOW: _give_up_redrive,
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
    listed = client.list_workflows(
        status=_ENDED_UNFINISHED, name=DOCUMENT_FLOW, load_input=False, load_output=False
    )
    open_ids = [w.workflow_id for w in listed if not (w.attributes or {}).get(GAVE_UP)]
    if not open_ids:
        return []
    # Inputs only for the page this run settles.
    return client.list_workflows(workflow_ids=open_ids[:_PAGE], status=_ENDED_UNFINISHED)


def reconcile(
    client: DBOSClient,
    write_factory: sessionmaker[Session],
    *,
    max_rewinds: int,
    downstream_lag_seconds: float,
) -> dict[str, int]:
    """Rewind or give up on every unresolved failed workflow (a page of them), and give up on
    the document flows that ended unfinished; how many of each. Safe to run twice or in two
    processes at once: a workflow rewound meanwhile is no longer in ERROR and is left alone."""
    rewound = gave_up = 0
    in_error = failed(client, [w.workflow_id for w in unresolved(client)[:_PAGE]])
    for status in in_error + ended_documents(client):
        try:
            if status.status == "ERROR" and rewinds(status) < max_rewinds:
                rewind(client, status)
                rewound += 1
            else:
                _give_up(client, write_factory, status, downstream_lag_seconds)
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
    downstream_lag_seconds: float,
) -> None:
    # The error's kind, never its message: it may quote a database row.
    kind = error_kind(status.error) if status.error is not None else "unknown error"
    text = f"the workflow {status.name} failed after {rewinds(status)} rewinds ({kind})"
    args = list(status.input["args"]) if status.input else []
    with write_factory() as session, session.begin():
        failed = Failed(status.workflow_id, args, text, downstream_lag_seconds)
        GIVE_UP[status.name](session, client, failed)
    client.update_workflow_attributes(status.workflow_id, {GAVE_UP: True}, merge=True)
    log.error(
        "workflow.given_up",
        workflow_id=status.workflow_id,
        workflow_name=status.name,
        rewinds=rewinds(status),
    )
