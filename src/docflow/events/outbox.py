"""Writing events: `emit` adds the event row in the caller's transaction and never commits.

So the event exists if and only if the state change it reports commits. When the runtime is
launched in this process, the commit of a transaction that emitted events wakes the publisher
(a rolled-back change wakes nobody): it enqueues a publisher run, unless one this process
enqueued has not started yet, which will read the new rows anyway (a run reads the unpublished
rows after it starts, so a commit before its start is seen, and a commit after it enqueues a new
one). Busy processes thus enqueue a run per polling interval, not one per event. A process that
dies between its commit and the wake-up leaves the rows to the publisher's schedule, which
picks them up within seconds. Nothing here hands an event to a consumer: only the publisher
does.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import structlog
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy import event as sa_event
from sqlalchemy.orm import Session

from docflow.db import bind_tenant
from docflow.events.envelopes import Envelope, schema_for, source_for
from docflow.events.models import OutboxEvent
from docflow.events.repository import OutboxRepository
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.observability import tracing

log = structlog.get_logger(__name__)

EVENT_PREFIX = "evt"
PUBLISH_FLOW = "docflow.events.publish"
PUBLISH_QUEUE = "events"
# session.info key: the first event the session's transaction emitted (the wake-up's id).
_WAKE_KEY = "docflow.events.wake"
# A run enqueued by another process disarms nothing here: after this long, wake again anyway.
_ARMED_SECONDS = 2.0


def emit(
    session: Session, *, tenant_id: str, type: str, subject: str, data: dict[str, Any]
) -> OutboxEvent:
    """Write the event `type` about `subject` in the session's transaction (inserted, not
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
        traceparent=tracing.traceparent(),
    )
    OutboxRepository(session, tenant_id).insert(event)
    session.info.setdefault(_WAKE_KEY, event.id)
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


class _Waker:
    """Enqueues publisher runs after commits, one at a time per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed_until = 0.0
        # The launched runtime's client; None when the runtime is not launched in this process.
        self.client: DBOSClient | None = None

    def wake(self, event_id: str) -> None:
        """Enqueue a publisher run (id `events.wake:<event id>`) unless one is waiting."""
        client = self.client
        if client is None:
            return  # not launched here: the schedule publishes it
        with self._lock:
            now = time.monotonic()
            if now < self._armed_until:
                return
            self._armed_until = now + _ARMED_SECONDS
        options: EnqueueOptions = {
            "workflow_name": PUBLISH_FLOW,
            "queue_name": PUBLISH_QUEUE,
            "workflow_id": f"events.wake:{event_id}",
        }
        try:
            client.enqueue(options, "wake")
        except Exception as exc:  # the commit stands; the schedule publishes the event
            self.disarm()
            log.warning("events.wake_failed", event_id=event_id, error=type(exc).__name__)

    def disarm(self) -> None:
        """A run has started: the next commit must enqueue another."""
        with self._lock:
            self._armed_until = 0.0


_waker = _Waker()


def publisher_started() -> None:
    """Called by a publisher run before it reads the unpublished rows."""
    _waker.disarm()


def attach_waker(client: DBOSClient) -> None:
    """The runtime launched in this process: commits that emitted events enqueue publisher
    runs through `client` (a wake-up enqueued before an earlier shutdown is not waiting any
    more)."""
    _waker.disarm()
    _waker.client = client


def detach_waker() -> None:
    """The runtime stopped in this process: commits leave their events to the schedule."""
    _waker.client = None


@sa_event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    # Also called when a SAVEPOINT is released: the transaction, and its lock, are still open.
    if session.get_nested_transaction() is not None:
        return
    event_id = session.info.pop(_WAKE_KEY, None)
    if event_id is not None:
        _waker.wake(event_id)


@sa_event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    if session.get_nested_transaction() is None:  # not a SAVEPOINT's rollback
        session.info.pop(_WAKE_KEY, None)
