"""The consumer workflow's step bodies: one attempt of a handler, and the dead letter."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy.orm import Session, sessionmaker

from docflow.events.consumers import ConsumerContext, PermanentError, consumer
from docflow.events.envelopes import Envelope
from docflow.events.models import DeadLetter
from docflow.events.repository import DeadLetterRepository
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.retry import is_transient

log = structlog.get_logger(__name__)

DEAD_LETTER_PREFIX = "dlq"
# The category of a dead letter written because the work's workflow itself failed and was given
# up on (see `docflow.reconciler`), not because the consumer or the receiver refused it.
INTERNAL = "internal"
_MAX_ERROR = 2000


@durable
@dataclass(frozen=True, slots=True)
class Attempt:
    """The outcome of one attempt: ok, or the error's text and category (`permanent`,
    `timeout`, `handler_error`, or the exception's own `category`)."""

    ok: bool
    error: str = ""
    category: str = ""

    @property
    def permanent(self) -> bool:
        return self.category == "permanent"


def categorise(exc: BaseException) -> str:
    """The error category recorded with a dead letter."""
    own = getattr(exc, "category", None)
    if isinstance(own, str) and own:
        return own
    if isinstance(exc, PermanentError):
        return "permanent"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "handler_error"


def attempt(
    write_factory: sessionmaker[Session],
    *,
    consumer_name: str,
    raw: dict[str, Any],
    number: int,
    workflow_id: str,
) -> Attempt:
    """Run the consumer's handler once in its own transaction (committed if it returns,
    rolled back if it raises). The handler's errors are values, so the step's checkpoint is
    always serialisable; a transient one (`docflow.retry.is_transient`: the database or
    storage briefly unreachable) is raised instead, for the step's retry policy, and costs
    none of the consumer's attempts."""
    envelope = Envelope.from_dict(raw)
    try:
        entry = consumer(consumer_name)
    except KeyError:
        return Attempt(False, f"consumer {consumer_name!r} is not registered", "permanent")
    try:
        with write_factory() as session, session.begin():
            context = ConsumerContext(session, envelope.tenant_id, number, workflow_id)
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
        text = f"{type(exc).__name__}: {exc}"[:_MAX_ERROR]
        return Attempt(False, text, categorise(exc))
    return Attempt(True)


def dead_letter_id(workflow_id: str) -> str:
    """A dead letter's id from the id of the workflow that gave up: writing it twice writes
    one row."""
    return f"{DEAD_LETTER_PREFIX}_{hashlib.sha256(workflow_id.encode()).hexdigest()[:32]}"


def add_dead_letter(
    session: Session,
    *,
    consumer_name: str,
    raw: dict[str, Any],
    error: str,
    category: str,
    attempts: int,
    workflow_id: str,
    target: str | None = None,
) -> str:
    """Record in the session's transaction that `consumer_name` gave up on the event (for
    `target` only, when given) after `attempts` attempts; the dead letter's id, one per
    workflow `workflow_id` that gave up, however often this runs."""
    envelope = Envelope.from_dict(raw)
    letter_id = dead_letter_id(workflow_id)
    repo = DeadLetterRepository(session, envelope.tenant_id)
    if repo.get(letter_id) is None:
        repo.add(
            DeadLetter(
                tenant_id=envelope.tenant_id,
                id=letter_id,
                consumer=consumer_name,
                target=target,
                event_id=envelope.id,
                event_type=envelope.type,
                envelope=raw,
                error=error[:_MAX_ERROR],
                category=category,
                attempts=attempts,
                created_at=utcnow(),
            )
        )
    log.warning(
        "event.dead_lettered",
        tenant_id=envelope.tenant_id,
        consumer=consumer_name,
        target=target,
        event_id=envelope.id,
        category=category,
    )
    return letter_id


def write_dead_letter(
    write_factory: sessionmaker[Session],
    *,
    consumer_name: str,
    raw: dict[str, Any],
    last: Attempt,
    attempts: int,
    workflow_id: str,
) -> str:
    """Record, in its own transaction, that `consumer_name` gave up on the event; the dead
    letter's id (once per consumer workflow)."""
    with write_factory() as session, session.begin():
        return add_dead_letter(
            session,
            consumer_name=consumer_name,
            raw=raw,
            error=last.error,
            category=last.category,
            attempts=attempts,
            workflow_id=workflow_id,
        )
