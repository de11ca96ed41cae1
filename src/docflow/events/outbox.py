"""Writing events: `emit` adds the event row in the caller's transaction and never commits.

So the event exists if and only if the state change it reports commits. When the runtime is
launched in this process, `emit` also enqueues a publisher run in the same transaction (the
wake-up: a rolled-back change wakes nobody); the publisher's schedule picks up anything else
within seconds. Nothing here hands an event to a consumer: only the publisher does.
"""

from __future__ import annotations

from typing import Any

import structlog
from dbos import EnqueueOptions
from sqlalchemy.orm import Session

from docflow.db import bind_tenant
from docflow.events.envelopes import Envelope, schema_for, source_for
from docflow.events.models import OutboxEvent
from docflow.kit import ids
from docflow.kit.clock import utcnow

log = structlog.get_logger(__name__)

EVENT_PREFIX = "evt"
PUBLISH_FLOW = "docflow.events.publish"
PUBLISH_QUEUE = "events"


def emit(
    session: Session, *, tenant_id: str, type: str, subject: str, data: dict[str, Any]
) -> OutboxEvent:
    """Write the event `type` about `subject` in the session's transaction (flushed, not
    committed) and wake the publisher after commit. `data` must include `tenant_id` equal to
    the tenant's; KeyError for a type without a committed schema."""
    schema_for(type)
    if data.get("tenant_id") != tenant_id:
        raise ValueError("the event's data must name its tenant")
    bind_tenant(session, tenant_id)
    event = OutboxEvent(
        tenant_id=tenant_id,
        id=ids.new_id(EVENT_PREFIX),
        type=type,
        source=source_for(tenant_id),
        subject=subject,
        data=data,
        occurred_at=utcnow(),
        published_at=None,
    )
    session.add(event)
    session.flush()
    _wake(session, event.id)
    log.info("event.emitted", tenant_id=tenant_id, event_id=event.id, type=type)
    return event


def envelope_of(event: OutboxEvent) -> Envelope:
    """The CloudEvents envelope of an outbox row."""
    return Envelope(
        id=event.id,
        source=event.source,
        type=event.type,
        time=event.occurred_at,
        subject=event.subject,
        data=dict(event.data),
    )


def _wake(session: Session, event_id: str) -> None:
    from docflow import runtime

    try:
        client = runtime.services().client
    except RuntimeError:
        return  # not launched here: the schedule publishes it
    options: EnqueueOptions = {
        "workflow_name": PUBLISH_FLOW,
        "queue_name": PUBLISH_QUEUE,
        "workflow_id": f"events.wake:{event_id}",
    }
    client.enqueue_in_transaction(session, options, "wake")
