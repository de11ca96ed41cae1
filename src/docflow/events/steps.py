"""The step bodies of the events workflows (declared in `events.flows`), session first.

The publisher's: `pending` claims the oldest unpublished events and `dispatch` hands a page of
them to their consumers. For each event of the page, in order, `dispatch` enqueues one consumer
workflow per matching consumer and marks the event published, the whole page in the caller's ONE
transaction (the DBOS tables share the application's database), so a crash leaves either all of
it or none; the consumer workflow id `{source}:{event_id}:{consumer}` makes a second enqueue a
no-op.

The consumer workflow's: `attempt` runs a handler once and returns its outcome as a value,
`dead_letter` records that the consumer gave up. The retention sweep: `sweep_all`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog
from dbos import DBOSClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.events import service
from docflow.events.consumers import ConsumerContext, PermanentError, consumer, consumers_for
from docflow.events.envelopes import Envelope
from docflow.events.outbox import envelope_of
from docflow.events.publisher import consumer_workflow_id, hand_over
from docflow.events.repository import OutboxRepository, all_tenant_ids, find_unpublished
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.runtime.retry import is_transient
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

PERMANENT = "permanent"


@durable
@dataclass(frozen=True, slots=True)
class Handled:
    """The handler returned: its writes are committed."""


@durable
@dataclass(frozen=True, slots=True)
class Failed:
    """The handler raised (or could not be found): the error's text and its category
    (`permanent`, `timeout`, `handler_error`, or the exception's own `category`)."""

    error: str
    category: str

    @property
    def permanent(self) -> bool:
        """Whether another attempt is pointless (the consumer gives up at once)."""
        return self.category == PERMANENT


Attempt = Handled | Failed
"""The outcome of one attempt of a consumer's handler."""


def pending(session: Session, limit: int) -> list[tuple[str, str]]:
    """(tenant id, event id) of up to `limit` unpublished events, oldest first."""
    return find_unpublished(session, limit)


def dispatch(session: Session, client: DBOSClient, events: list[tuple[str, str]]) -> int:
    """Hand each (tenant id, event id) to every matching consumer and mark it published, in
    order, in the session's transaction; how many it handed over (an event published already,
    or gone, is skipped)."""
    handed = 0
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
    for target in targets:
        workflow_id = consumer_workflow_id(envelope, target.name)
        hand_over(session, client, envelope, target, workflow_id, traceparent=event.traceparent)
    repo.mark_published(event_id, utcnow())
    return [c.name for c in targets]


def categorise(exc: BaseException) -> str:
    """The error category recorded with a dead letter."""
    own = getattr(exc, "category", None)
    if isinstance(own, str) and own:
        return own
    if isinstance(exc, PermanentError):
        return PERMANENT
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "handler_error"


def attempt(
    session: Session,
    client: DBOSClient,
    *,
    consumer_name: str,
    raw: dict[str, Any],
    number: int,
    workflow_id: str,
) -> Attempt:
    """Run the consumer's handler once in a transaction of its own on `session` (committed if
    it returns, rolled back if it raises): the handler's failure is this step's result, so the
    step owns that transaction. The handler's errors are values, so the step's checkpoint is
    always serialisable; a transient one (`docflow.runtime.retry.is_transient`: the database or
    storage briefly unreachable) is raised instead, for the step's retry policy, and costs
    none of the consumer's attempts."""
    envelope = Envelope.from_dict(raw)
    try:
        entry = consumer(consumer_name)
    except KeyError:
        return Failed(f"consumer {consumer_name!r} is not registered", PERMANENT)
    try:
        with session.begin():
            context = ConsumerContext(session, envelope.tenant_id, number, workflow_id, client)
            entry.handler(context, envelope)
    except Exception as exc:
        if is_transient(exc):
            raise
        log.warning(
            "event.consumer_failed",
            consumer=consumer_name,
            event_id=envelope.id,
            attempt=number,
            error_type=type(exc).__name__,
        )
        return Failed(f"{type(exc).__name__}: {exc}"[: service.MAX_ERROR], categorise(exc))
    return Handled()


def dead_letter(
    session: Session,
    *,
    consumer_name: str,
    raw: dict[str, Any],
    last: Failed,
    attempts: int,
    workflow_id: str,
) -> str:
    """Record, in the session's transaction, that `consumer_name` gave up on the event after
    `attempts` attempts, the last one `last`; the dead letter's id (once per consumer
    workflow)."""
    return service.add_dead_letter(
        session,
        consumer_name=consumer_name,
        raw=raw,
        error=last.error,
        category=last.category,
        attempts=attempts,
        workflow_id=workflow_id,
    )


def sweep_all(write_factory: sessionmaker[Session], *, retention_days: int) -> service.Swept:
    """`service.sweep` every tenant, each in its own transaction; the totals deleted."""
    with write_factory() as session:
        tenant_ids = all_tenant_ids(session)
    total = service.Swept(0, 0, 0)
    for tenant_id in tenant_ids:
        with write_factory() as session, session.begin():
            swept = service.sweep(session, TenantContext(tenant_id), retention_days=retention_days)
        total = service.Swept(*(a + b for a, b in zip(total, swept, strict=True)))
    return total
