"""The delivery job `webhooks.deliver`: one DBOS workflow per (event, endpoint) and its steps.

A job (see `webhooks.jobs` for its ids and how it is enqueued) opens its delivery
(`webhooks.open`), reads how many attempts it may make (`webhooks.max_attempts`, kept for the
job's life) and makes up to that many (`webhooks.attempt`), sleeping durably (DBOS.sleep
survives restarts) between two for the delay the attempt returned. The steps retry transient
database errors (`docflow.runtime.retry`). The step bodies are in `webhooks.steps`; each step
here opens its session and calls one.
"""

from __future__ import annotations

from typing import Any

from dbos import DBOS

from docflow.config import Settings
from docflow.runtime import context
from docflow.runtime.retry import db_step
from docflow.webhooks import steps
from docflow.webhooks.jobs import DELIVER_FLOW, WEBHOOKS_QUEUE
from docflow.webhooks.models import DeliveryStatus


@DBOS.workflow(name=DELIVER_FLOW, max_recovery_attempts=100)
def deliver(tenant_id: str, endpoint_id: str, event: dict[str, Any]) -> str:
    """Deliver `event` to one endpoint; the delivery's final status (DELIVERED, DEAD, SKIPPED:
    not sent, also when the event or its delivery was deleted with its batch)."""
    opened = _open(tenant_id, endpoint_id, str(event["id"]), str(event["type"]))
    if opened is None:
        return DeliveryStatus.SKIPPED
    delivery_id, first = opened
    last = first + _max_attempts() - 1
    for number in range(first, last + 1):
        following = _attempt(tenant_id, endpoint_id, delivery_id, event, (number, last))
        if isinstance(following, steps.Ended):
            return following.status
        DBOS.sleep(following.seconds)
    return DeliveryStatus.DEAD


@DBOS.step(name="webhooks.max_attempts")
def _max_attempts() -> int:
    # A step, so a delivery keeps the limit it started with when the setting changes.
    return context.services().settings.webhook_max_attempts


@db_step("webhooks.open")
def _open(
    tenant_id: str, endpoint_id: str, event_id: str, event_type: str
) -> tuple[str, int] | None:
    with context.services().write_session() as session, session.begin():
        return steps.begin(
            session, tenant_id, endpoint_id=endpoint_id, event_id=event_id, event_type=event_type
        )


@db_step("webhooks.attempt")
def _attempt(
    tenant_id: str,
    endpoint_id: str,
    delivery_id: str,
    event: dict[str, Any],
    attempt: tuple[int, int],
) -> steps.Next:
    """Send attempt `attempt` = (number, last number) and record it; what follows it: another
    attempt after a delay, or the delivery's final status."""
    sent = steps.Sent(
        tenant_id, endpoint_id, delivery_id, event, attempt, job_id=DBOS.workflow_id or ""
    )
    return steps.attempt(context.services(), sent)


def _queues(settings: Settings) -> list[context.Queue]:
    return [context.Queue(WEBHOOKS_QUEUE, polling_interval_sec=settings.background_polling_seconds)]


LAUNCH = context.Flows(queues=_queues)
