"""The publisher's step bodies: find unpublished events, hand them to their consumers.

`dispatch` is the only code that starts consumer workflows for a fresh event. For each event of
a claimed page, in order, it enqueues one consumer workflow per matching consumer and marks the
event published, the whole page in ONE transaction (the DBOS tables share the application's
database), so a crash leaves either all of it or none; the consumer workflow id
`{source}:{event_id}:{consumer}` makes a second enqueue a no-op.
"""

from __future__ import annotations

import structlog
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session, sessionmaker

from docflow.events.consumers import Consumer, consumers_for
from docflow.events.envelopes import Envelope
from docflow.events.outbox import envelope_of
from docflow.events.repository import OutboxRepository, find_unpublished
from docflow.kit.clock import utcnow

log = structlog.get_logger(__name__)

CONSUME_FLOW = "docflow.events.consume"


def consumer_workflow_id(envelope: Envelope, consumer_name: str) -> str:
    """The id of the consumer workflow of (event, consumer): one execution per pair."""
    return f"{envelope.source}:{envelope.id}:{consumer_name}"


def pending(session_factory: sessionmaker[Session], limit: int) -> list[tuple[str, str]]:
    """(tenant id, event id) of up to `limit` unpublished events, oldest first."""
    with session_factory() as session, session.begin():
        return find_unpublished(session, limit)


def hand_over(
    session: Session, client: DBOSClient, envelope: Envelope, consumer: Consumer, workflow_id: str
) -> None:
    """Enqueue `consumer`'s workflow for `envelope` with `workflow_id` in the session's
    transaction (no-op when that workflow exists)."""
    options: EnqueueOptions = {
        "workflow_name": CONSUME_FLOW,
        "queue_name": consumer.queue,
        "workflow_id": workflow_id,
    }
    client.enqueue_in_transaction(session, options, consumer.name, envelope.to_dict())


def dispatch(
    write_factory: sessionmaker[Session], client: DBOSClient, events: list[tuple[str, str]]
) -> int:
    """Hand each (tenant id, event id) to every matching consumer and mark it published, in
    order and atomically; how many it handed over (an event published already, or gone, is
    skipped)."""
    handed = 0
    with write_factory() as session, session.begin():
        for tenant_id, event_id in events:
            names = _dispatch_one(session, client, tenant_id, event_id)
            if names is not None:
                handed += 1
                log.info("event.published", tenant_id=tenant_id, event_id=event_id, consumers=names)
    return handed


def _dispatch_one(
    session: Session, client: DBOSClient, tenant_id: str, event_id: str
) -> list[str] | None:
    repo = OutboxRepository(session, tenant_id)
    event = repo.get(event_id)
    if event is None or event.published_at is not None:
        return None
    envelope = envelope_of(event)
    targets = consumers_for(session, envelope)
    for consumer in targets:
        hand_over(
            session, client, envelope, consumer, consumer_workflow_id(envelope, consumer.name)
        )
    repo.mark_published(event_id, utcnow())
    return [c.name for c in targets]
