"""Delivery jobs: the durable workflow `webhooks.deliver` of one event to one endpoint, its ids,
and the one way each is enqueued (the first delivery, and a delivery again).

The first job of (event, endpoint) has the id `webhook:{event_id}:{endpoint_id}`: enqueueing it
twice (a redelivered or replayed event) is a no-op, and a slow or failing endpoint never holds up
another endpoint or another event. A job started again for a dead letter is
`{that id}:redrive:{letter id}`; one for a redeliver request without a letter is
`{that id}:redelivery:{ulid}`. Jobs are enqueued in the caller's transaction
(`DBOSClient.enqueue_in_transaction`), so they start only if it commits. `webhooks.flows`
declares the workflow.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow.events.envelopes import Envelope
from docflow.kit import ids
from docflow.observability import tracing
from docflow.webhooks.models import WebhookEndpoint
from docflow.webhooks.repository import WebhookRepository

log = structlog.get_logger(__name__)

DELIVER_FLOW = "webhooks.deliver"
# One job per (event, endpoint). No concurrency limit: a job spends most of its life in a durable
# sleep between attempts, and a slot held while sleeping would starve others.
WEBHOOKS_QUEUE = "webhooks"
# The consumer of the event registry that starts the jobs: a dead delivery is its dead letter,
# with the endpoint as the letter's target.
CONSUMER_NAME = "webhooks"


def workflow_id(event_id: str, endpoint_id: str) -> str:
    """The first delivery job's id: one delivery per (event, endpoint), ever."""
    return f"webhook:{event_id}:{endpoint_id}"


def redelivery_id(event_id: str, endpoint_id: str) -> str:
    """A fresh id for a redelivery job of (event, endpoint) not tied to a dead letter."""
    return f"{workflow_id(event_id, endpoint_id)}:redelivery:{ids.ulid()}"


# Why an endpoint of the event's project does not receive an event. Live delivery, a replay and a
# redrive ask `refusal` the same question, so none of them can send what another would not.
DISABLED = "endpoint_disabled"
NOT_SUBSCRIBED = "type_not_subscribed"
CREATED_AFTER = "endpoint_created_after_event"
REFUSALS = {
    DISABLED: "the endpoint is disabled",
    NOT_SUBSCRIBED: "the endpoint does not subscribe to the event's type",
    CREATED_AFTER: "the endpoint was created after the event",
}


def refusal(endpoint: WebhookEndpoint, *, event_type: str, occurred_at: datetime) -> str | None:
    """Why `endpoint` does not receive an event of `event_type` that occurred at
    `occurred_at` (a key of `REFUSALS`); None when it does: it is enabled, its filter accepts
    the type (an empty filter accepts every type) and it existed when the event occurred (an
    endpoint receives the events of after its creation, never earlier ones)."""
    if not endpoint.enabled:
        return DISABLED
    if endpoint.event_types and event_type not in endpoint.event_types:
        return NOT_SUBSCRIBED
    if endpoint.created_at > occurred_at:
        return CREATED_AFTER
    return None


@dataclass(frozen=True)
class Selection:
    """The endpoints of an event's project that receive it (oldest first), and how many of
    the others do not, by reason (`REFUSALS`)."""

    endpoint_ids: list[str]
    skipped: dict[str, int]


def select_endpoints(session: Session, tenant_id: str, event: Envelope) -> Selection:
    """The endpoints of the event's project (`data.project_id`) that receive it, by `refusal`;
    none for an event of no project."""
    project_id = event.data.get("project_id")
    if not isinstance(project_id, str):
        return Selection([], {})
    chosen: list[str] = []
    skipped: Counter[str] = Counter()
    for endpoint in WebhookRepository(session, tenant_id).project_endpoints(project_id):
        reason = refusal(endpoint, event_type=event.type, occurred_at=event.time)
        if reason is None:
            chosen.append(endpoint.id)
        else:
            skipped[reason] += 1
    return Selection(chosen, dict(skipped))


def start_deliveries(
    session: Session, client: DBOSClient, tenant_id: str, event: dict[str, Any]
) -> list[str]:
    """Enqueue, in the session's transaction, one delivery job per endpoint that receives the
    event (`select_endpoints`); the jobs' ids. An id that already exists (the same event
    again) is a no-op, so this is safe to repeat."""
    selection = select_endpoints(session, tenant_id, Envelope.from_dict(event))
    started = []
    for endpoint_id in selection.endpoint_ids:
        job_id = workflow_id(str(event["id"]), endpoint_id)
        enqueue(session, client, tenant_id, endpoint_id=endpoint_id, event=event, job_id=job_id)
        started.append(job_id)
    log.info(
        "webhook.deliveries_enqueued",
        tenant_id=tenant_id,
        count=len(started),
        skipped=selection.skipped,
    )
    return started


def enqueue(
    session: Session,
    client: DBOSClient,
    tenant_id: str,
    *,
    endpoint_id: str,
    event: dict[str, Any],
    job_id: str,
) -> None:
    """Enqueue, in the session's transaction, the delivery job `job_id` of `event` to the
    endpoint; a job of an event already handed to this endpoint continues the delivery's log,
    with the same `webhook-id`. A `job_id` that exists already is a no-op."""
    options: EnqueueOptions = {
        "workflow_name": DELIVER_FLOW,
        "queue_name": WEBHOOKS_QUEUE,
        "workflow_id": job_id,
        "otel_context": tracing.current(),  # the consumer's, so the event's trace
    }
    client.enqueue_in_transaction(session, options, tenant_id, endpoint_id, event)


def first_job_event(client: DBOSClient, *, endpoint_id: str, event_id: str) -> dict[str, Any]:
    """The event the first delivery job of (event, endpoint) was given; LookupError when that
    job is no longer kept."""
    first = workflow_id(event_id, endpoint_id)
    found = client.list_workflows(workflow_ids=[first], load_input=True)
    if not found or not found[0].input or len(found[0].input["args"]) != 3:
        raise LookupError(f"the delivery job {first} is no longer kept")
    event: dict[str, Any] = found[0].input["args"][2]
    return event
