"""Use cases over events: dead letters (write, list, redrive with an audit), replay, retention.

Redrive and replay re-deliver archived events with their ORIGINAL event id through the
publisher's `hand_over` (the one place that starts consumer workflows). A replay uses the
consumer workflow id `{source}:{event_id}:{consumer}`, so an event the consumer already had is
a no-op; a redrive uses `{that id}:redrive:{dead letter id}` and is recorded (who, when, why)
in the same transaction, once: a dead letter is redriven at most once (a redrive that fails
again leaves a new dead letter). A letter that names a target (a webhook endpoint) is redriven
by its consumer's `redrive_target`, for that target alone, and recorded the same way.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import structlog
from dbos import DBOSClient
from dbos._error import DBOSException
from sqlalchemy.orm import Session

from docflow.errors import Conflict, NotFound, get_one
from docflow.events.consumers import Consumer, Fanout, consumers, load_consumers
from docflow.events.consumers import consumer as registered_consumer
from docflow.events.envelopes import Envelope
from docflow.events.models import DeadLetter
from docflow.events.outbox import envelope_of
from docflow.events.publisher import consumer_workflow_id, hand_over
from docflow.events.repository import DeadLetterRepository, OutboxRepository
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.observability.metrics import DEAD_LETTERS, count_after_commit
from docflow.runtime.retry import failed, rewind
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

MAX_LIST = 500
MAX_ERROR = 2000
DEAD_LETTER_PREFIX = "dlq"
# The category of a dead letter written because the work's workflow itself failed and was given
# up on (see `docflow.reconciler`), not because the consumer or the receiver refused it.
INTERNAL = "internal"


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
                error=error[:MAX_ERROR],
                category=category,
                attempts=attempts,
                created_at=utcnow(),
            )
        )
        count_after_commit(session, DEAD_LETTERS, consumer=consumer_name)
    log.warning(
        "event.dead_lettered",
        tenant_id=envelope.tenant_id,
        consumer=consumer_name,
        target=target,
        event_id=envelope.id,
        category=category,
    )
    return letter_id


def dead_letter_again(
    session: Session,
    *,
    tenant_id: str,
    letter_id: str,
    error: str,
    category: str,
    attempts: int,
    workflow_id: str,
) -> str:
    """The redrive `workflow_id` of letter `letter_id` gave up too: a new dead letter of the
    same consumer, target and event (see `add_dead_letter`); its id."""
    letter = get_one(DeadLetterRepository(session, tenant_id).get(letter_id), "dead letter")
    return add_dead_letter(
        session,
        consumer_name=letter.consumer,
        raw=letter.envelope,
        error=error,
        category=category,
        attempts=attempts,
        workflow_id=workflow_id,
        target=letter.target,
    )


def list_dead_letters(
    session: Session,
    tenant: TenantContext,
    *,
    consumer: str | None = None,
    target: str | None = None,
    category: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    open_only: bool = False,
    limit: int = 100,
) -> list[DeadLetter]:
    """The tenant's dead letters (redriven ones included, with their audit, unless
    `open_only`), newest first."""
    return DeadLetterRepository(session, tenant.tenant_id).select(
        consumer=consumer,
        target=target,
        category=category,
        since=since,
        until=until,
        open_only=open_only,
        limit=max(1, min(limit, MAX_LIST)),
    )


def open_dead_letter(
    session: Session, tenant: TenantContext, *, consumer: str, target: str, event_id: str
) -> DeadLetter | None:
    """The letter `consumer` wrote for `target` and the event, if not redriven yet."""
    return DeadLetterRepository(session, tenant.tenant_id).open_for(consumer, target, event_id)


def redrive(
    session: Session,
    client: DBOSClient,
    tenant: TenantContext,
    *,
    letter_id: str,
    actor: str,
    reason: str,
) -> DeadLetter:
    """Deliver a dead letter's event again, with the original event id, to its consumer (or,
    for a letter naming a target, to that target alone, through the consumer's
    `redrive_target`), and record who asked, when and why. NotFound for another tenant's or a
    missing letter; Conflict when it was redriven already, its consumer is no longer
    registered or its target cannot take it now. The caller commits (the redrive starts only
    if the commit does, and a refused one changes nothing)."""
    if not actor.strip() or not reason.strip():
        raise Conflict("a redrive needs who asks and why", field="reason")
    load_consumers()
    repo = DeadLetterRepository(session, tenant.tenant_id)
    letter = get_one(repo.get(letter_id), "dead letter")
    if letter.redriven_at is not None:
        raise Conflict("the dead letter was redriven already")
    try:
        entry = registered_consumer(letter.consumer)
    except KeyError:
        raise Conflict("the dead letter's consumer is not registered", field="consumer") from None
    workflow_id = _start_again(session, client, entry, letter)
    # Compare-and-set: of two concurrent redrives, the second finds it set and rolls back.
    if not repo.mark_redriven(
        letter_id, now=utcnow(), actor=actor, reason=reason, workflow_id=workflow_id
    ):
        raise Conflict("the dead letter was redriven already")
    session.refresh(letter)
    log.info(
        "event.redriven",
        tenant_id=tenant.tenant_id,
        letter_id=letter_id,
        actor=actor,
        workflow_id=workflow_id,
    )
    return letter


def _start_again(session: Session, client: DBOSClient, entry: Consumer, letter: DeadLetter) -> str:
    """Start the letter's work again in the session's transaction; the workflow id."""
    if letter.target is not None:
        if entry.redrive_target is None:
            raise Conflict(f"consumer {entry.name} cannot redrive a letter for one target")
        return entry.redrive_target(session, client, letter)
    envelope = Envelope.from_dict(letter.envelope)
    workflow_id = f"{consumer_workflow_id(envelope, entry.name)}:redrive:{letter.id}"
    hand_over(session, client, envelope, entry, workflow_id)
    return workflow_id


@dataclass(frozen=True)
class Replay:
    """What a replay did: how many archived events it handed to the consumer again, the ids
    of the workflows that did their work (the consumer's, and its own jobs for them), how many
    events it did not hand over because the consumer's filter refuses them (`not_handled`: for
    the webhooks consumer, no endpoint receives them), and how many of the consumer's targets
    it skipped, by reason (`Fanout.skipped`: for webhooks, endpoints created after the event,
    not subscribed to its type, or disabled)."""

    consumer: str
    events: int
    jobs: tuple[str, ...] = ()
    not_handled: int = 0
    skipped: dict[str, int] = field(default_factory=dict)


def replay(
    session: Session,
    client: DBOSClient,
    tenant: TenantContext,
    *,
    consumer: str,
    since: datetime,
    limit: int = 10_000,
) -> Replay:
    """Hand the tenant's published events since `since` that match `consumer`'s filter to it
    again, with their original ids: an event it already had is a no-op (same workflow id).
    The consumer selects its targets as for a live event (`Consumer.handles`, `targets`), so
    a replay never reaches a target live delivery would not have. NotFound when the consumer
    is not registered. The caller commits, then passes the replay's `jobs` to
    `resume_failed`, so work of those events that failed runs again."""
    load_consumers()
    try:
        entry = registered_consumer(consumer)
    except KeyError:
        raise NotFound("consumer not registered", field="consumer") from None
    count = not_handled = 0
    jobs: list[str] = []
    skipped: Counter[str] = Counter()
    for event in OutboxRepository(session, tenant.tenant_id).published_since(since, limit):
        envelope = envelope_of(event)
        fanout = entry.targets(session, envelope) if entry.targets else Fanout([], {})
        skipped.update(fanout.skipped)
        if not entry.handles(session, envelope):
            not_handled += 1
            continue
        workflow_id = consumer_workflow_id(envelope, entry.name)
        hand_over(session, client, envelope, entry, workflow_id)
        jobs += [workflow_id, *fanout.jobs]
        count += 1
    log.info(
        "event.replayed",
        tenant_id=tenant.tenant_id,
        consumer=consumer,
        events=count,
        not_handled=not_handled,
        skipped=dict(skipped),
    )
    return Replay(consumer, count, tuple(jobs), not_handled, dict(skipped))


def resume_failed(client: DBOSClient, workflow_ids: Sequence[str]) -> int:
    """Rewind those of the workflows that ended in ERROR (and were not given up on) from the
    step that failed (`docflow.runtime.retry.rewind`); how many. Outside any open transaction: on
    SQLite the rewind needs the write lock."""
    resumed = 0
    for start in range(0, len(workflow_ids), MAX_LIST):
        for status in failed(client, list(workflow_ids[start : start + MAX_LIST])):
            try:
                rewind(client, status)
            except DBOSException:  # rewound meanwhile by the reconciler
                continue
            resumed += 1
    return resumed


@durable
class Swept(NamedTuple):
    """How many rows a retention sweep deleted: events, dead letters, consumers' own records
    (the webhooks delivery log)."""

    events: int
    dead_letters: int
    consumer_records: int


def sweep(session: Session, tenant: TenantContext, *, retention_days: int) -> Swept:
    """Delete the tenant's published events, dead letters and consumers' finished records
    older than the retention. Unpublished events are never swept."""
    before = utcnow() - timedelta(days=retention_days)
    events = OutboxRepository(session, tenant.tenant_id).sweep(before)
    letters = DeadLetterRepository(session, tenant.tenant_id).sweep(before)
    load_consumers()
    records = sum(
        entry.sweep(session, tenant.tenant_id, before)
        for entry in consumers()
        if entry.sweep is not None
    )
    log.info(
        "event.swept",
        tenant_id=tenant.tenant_id,
        events=events,
        dead_letters=letters,
        consumer_records=records,
    )
    return Swept(events, letters, records)
