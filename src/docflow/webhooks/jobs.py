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

from typing import Any

import structlog
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow.kit import ids
from docflow.observability import tracing
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


def matching_endpoints(
    session: Session, tenant_id: str, *, project_id: str, event_type: str
) -> list[str]:
    """Ids of the project's enabled endpoints whose filter accepts `event_type` (an empty
    filter accepts every type), oldest first."""
    endpoints = WebhookRepository(session, tenant_id).project_endpoints(project_id)
    return [
        e.id for e in endpoints if e.enabled and (not e.event_types or event_type in e.event_types)
    ]


def start_deliveries(
    session: Session, client: DBOSClient, tenant_id: str, event: dict[str, Any]
) -> list[str]:
    """Enqueue, in the session's transaction, one delivery job per matching endpoint of the
    event's project (`data.project_id`); the jobs' ids. An id that already exists (the same
    event again) is a no-op, so this is safe to repeat."""
    data = event.get("data") or {}
    project_id = data.get("project_id")
    if not isinstance(project_id, str):
        return []
    endpoint_ids = matching_endpoints(
        session, tenant_id, project_id=project_id, event_type=str(event["type"])
    )
    started = []
    for endpoint_id in endpoint_ids:
        job_id = workflow_id(str(event["id"]), endpoint_id)
        enqueue(session, client, tenant_id, endpoint_id=endpoint_id, event=event, job_id=job_id)
        started.append(job_id)
    log.info("webhook.deliveries_enqueued", tenant_id=tenant_id, count=len(started))
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
