"""The step bodies of a delivery job (declared in `webhooks.flows`) and of the webhooks
consumer, plain functions taking the session (or the services) first.

The consumer's handler (`fan_out`) enqueues the event's delivery jobs. A job opens its delivery
(`begin`), then makes attempts (`attempt`): every attempt is signed afresh (new
timestamp) with the same `webhook-id`, the event id. 2xx delivers; 410 Gone disables the
endpoint; after the last failed attempt the delivery is DEAD with the last error, and a dead
letter of consumer `webhooks` for the endpoint is written in the same transaction. A delivery
that ends DELIVERED or DEAD has the downstream state of its event's document checked in that
transaction too (`documents.downstream.announce`). Between two
attempts the job sleeps for the next value of `settings.webhook_retry_seconds` with random
jitter. An attempt whose result could not be recorded (a crash or a lost connection after
sending) is sent again with the same `webhook-id`: receivers deduplicate on it. Also here: the
reconciler's give-up of a job that failed (`give_up`), and the retention sweep of the log.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from sqlalchemy.orm import Session

from docflow.config import Settings
from docflow.documents.downstream import announce
from docflow.events.consumers import ConsumerContext
from docflow.events.envelopes import DOCUMENT_DOWNSTREAM_CHANGED, Envelope
from docflow.events.repository import OutboxRepository
from docflow.events.service import INTERNAL, add_dead_letter
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.runtime.context import Services
from docflow.webhooks import deliveries, jobs, signing, transport
from docflow.webhooks.deliveries import GONE
from docflow.webhooks.jobs import CONSUMER_NAME
from docflow.webhooks.models import DeliveryStatus
from docflow.webhooks.repository import WebhookRepository

log = structlog.get_logger(__name__)


@durable
@dataclass(frozen=True, slots=True)
class Retry:
    """The attempt failed and another follows after `seconds`."""

    seconds: float


@durable
@dataclass(frozen=True, slots=True)
class Ended:
    """The delivery ended with `status` (DELIVERED, DEAD or SKIPPED)."""

    status: str


Next = Retry | Ended
"""What follows an attempt."""


@dataclass(frozen=True)
class Sent:
    """Which attempt of which delivery, by which job: `attempt` is (number, last number)."""

    tenant_id: str
    endpoint_id: str
    delivery_id: str
    event: dict[str, Any]
    attempt: tuple[int, int]
    job_id: str


def fan_out(context: ConsumerContext, envelope: Envelope) -> None:
    """The webhooks consumer's handler: enqueue the event's delivery jobs under the event's
    tenant (committed with the consumer's transaction)."""
    jobs.start_deliveries(context.session, context.client, context.tenant_id, envelope.to_dict())


def begin(
    session: Session, tenant_id: str, *, endpoint_id: str, event_id: str, event_type: str
) -> tuple[str, int] | None:
    """(delivery id, number of the next attempt) of the job's delivery, opened if new, in the
    session's transaction (a job again for the same event continues its numbering). None when
    there is nothing to deliver: no delivery was opened and the event is gone from the outbox
    (deleted with its batch, `batches.lifecycle`; held until the commit, so a deletion under
    way either waits and takes the new delivery with it, or was first)."""
    opened = WebhookRepository(session, tenant_id).delivery_for(endpoint_id, event_id)
    if opened is None and OutboxRepository(session, tenant_id).hold(event_id) is None:
        log.info("webhook.event_gone", tenant_id=tenant_id, event_id=event_id)
        return None
    return deliveries.open_delivery(
        session,
        tenant_id,
        endpoint_id=endpoint_id,
        event_id=event_id,
        event_type=event_type,
        now=utcnow(),
    )


def encode(event: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed) for an event: compact JSON, UTF-8."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


def retry_delay(settings: Settings, attempt: int) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based): the schedule's value for it
    (its last value repeats), times a random factor within +/- the jitter."""
    schedule = settings.webhook_retry_seconds or [60.0]
    base = schedule[min(attempt, len(schedule)) - 1]
    jitter = settings.webhook_retry_jitter
    return max(0.0, base * random.uniform(1 - jitter, 1 + jitter))


def attempt(services: Services, sent: Sent) -> Next:
    """Send the attempt and record it, each database write in its own short transaction (no
    transaction stays open while the receiver answers); what follows it. A delivery deleted
    (with its event's batch) before or while the attempt is made ends the job, SKIPPED,
    recording nothing."""
    settings = services.settings
    try:
        with services.session_factory() as session:
            if WebhookRepository(session, sent.tenant_id).delivery(sent.delivery_id) is None:
                return _gone(sent)
            found = deliveries.target(
                session, sent.tenant_id, sent.endpoint_id, settings.signing_secret
            )
    except ValueError as exc:
        # The secret was sealed under another signing secret: nothing can be signed, and the
        # attempt says so in the log instead of failing the job.
        unreadable = transport.AttemptResult(None, 0, str(exc), transport.SECRET)
        return _record(services, sent, unreadable)
    if found is None:
        with services.write_session() as session, session.begin():
            if not _held(session, sent):
                return _gone(sent)
            deliveries.skip(session, sent.tenant_id, sent.delivery_id, now=utcnow())
        return Ended(DeliveryStatus.SKIPPED)
    result = _send(settings, found, str(sent.event["id"]), encode(sent.event))
    return _record(services, sent, result)


def _send(
    settings: Settings, found: deliveries.Target, event_id: str, body: bytes
) -> transport.AttemptResult:
    headers = signing.sign(found.secret, event_id, int(time.time()), body).as_dict()
    return transport.post(
        found.url,
        body,
        headers,
        timeout=settings.webhook_timeout_seconds,
        allow_private=settings.allow_private_webhook_urls,
    )


def _record(services: Services, sent: Sent, result: transport.AttemptResult) -> Next:
    """Write the attempt and the delivery's new state in one transaction, with the dead letter
    when the delivery died and the endpoint's disabling on a 410."""
    now = utcnow()
    tenant_id, number = sent.tenant_id, sent.attempt[0]
    following, next_at = _following(services.settings, result, sent.attempt, now)
    ended = following.status if isinstance(following, Ended) else None
    with services.write_session() as session, session.begin():
        if not _held(session, sent):
            return _gone(sent)
        deliveries.record_attempt(
            session,
            tenant_id,
            delivery_id=sent.delivery_id,
            number=number,
            result=result,
            status=ended or DeliveryStatus.PENDING,
            attempted_at=now,
            next_retry_at=next_at,
        )
        if ended == DeliveryStatus.DEAD:
            deliveries.dead_letter(
                session,
                endpoint_id=sent.endpoint_id,
                event=sent.event,
                result=result,
                attempts=number,
                workflow_id=sent.job_id,
            )
        if result.status_code == GONE:
            reason = "the endpoint answered 410 Gone"
            deliveries.disable_endpoint(
                session, tenant_id, sent.endpoint_id, reason=reason, now=now
            )
        if ended in (DeliveryStatus.DELIVERED, DeliveryStatus.DEAD):
            check_document(
                session,
                tenant_id,
                sent.event,
                lag_seconds=services.settings.downstream_lag_seconds,
                now=now,
            )
    log.info(
        "webhook.attempted",
        tenant_id=tenant_id,
        delivery_id=sent.delivery_id,
        attempt=number,
        status_code=result.status_code,
        outcome=ended or "retry",
    )
    return following


def _held(session: Session, sent: Sent) -> bool:
    """Lock the delivery for the rest of the transaction: whether it is still there (a batch
    deletion waits for the lock, `batches.lifecycle`)."""
    return WebhookRepository(session, sent.tenant_id).lock_delivery(sent.delivery_id) is not None


def _gone(sent: Sent) -> Ended:
    log.info("webhook.delivery_gone", tenant_id=sent.tenant_id, delivery_id=sent.delivery_id)
    return Ended(DeliveryStatus.SKIPPED)


def check_document(
    session: Session, tenant_id: str, event: dict[str, Any], *, lag_seconds: float, now: datetime
) -> None:
    """A delivery of `event` ended: check its document's downstream state, in the session's
    transaction. Not for an event announcing that state, whose deliveries never count (so a
    dead announcement cannot degrade the document it announced, and announce again)."""
    subject = str(event.get("subject", ""))
    if event.get("type") == DOCUMENT_DOWNSTREAM_CHANGED or not subject.startswith("documents/"):
        return
    announce(
        session, tenant_id, subject.removeprefix("documents/"), lag_seconds=lag_seconds, now=now
    )


def _following(
    settings: Settings, result: transport.AttemptResult, attempt: tuple[int, int], now: datetime
) -> tuple[Next, datetime | None]:
    number, max_attempts = attempt
    if result.delivered:
        return Ended(DeliveryStatus.DELIVERED), None
    if result.status_code == GONE or number >= max_attempts:
        return Ended(DeliveryStatus.DEAD), None
    delay = retry_delay(settings, number)
    return Retry(delay), now + timedelta(seconds=delay)


def give_up(
    session: Session,
    tenant_id: str,
    *,
    endpoint_id: str,
    event: dict[str, Any],
    error: str,
    workflow_id: str,
    lag_seconds: float,
    now: datetime,
) -> str | None:
    """Mark the delivery of `event` to the endpoint DEAD with `error`, write its dead letter
    (category `internal`) and check its document's downstream state (`check_document`, as a
    delivery that dies after its last attempt does), in the session's transaction: its job
    `workflow_id` failed and was given up on (see `docflow.reconciler`). The letter's id; None
    when the delivery had ended already. A job that failed before opening the delivery opens
    it first."""
    existing = WebhookRepository(session, tenant_id).delivery_for(endpoint_id, str(event["id"]))
    if existing is None:
        delivery_id, _ = deliveries.open_delivery(
            session,
            tenant_id,
            endpoint_id=endpoint_id,
            event_id=str(event["id"]),
            event_type=str(event["type"]),
            now=now,
        )
        existing = deliveries.get_delivery(session, tenant_id, delivery_id)
    if existing.status != DeliveryStatus.PENDING:
        return None
    existing.status = DeliveryStatus.DEAD
    existing.last_error = error
    existing.next_attempt_at = None
    existing.updated_at = now
    session.flush()
    letter = add_dead_letter(
        session,
        consumer_name=CONSUMER_NAME,
        raw=event,
        error=error,
        category=INTERNAL,
        attempts=existing.attempts,
        workflow_id=workflow_id,
        target=endpoint_id,
    )
    check_document(session, tenant_id, event, lag_seconds=lag_seconds, now=now)
    return letter


def sweep(session: Session, tenant_id: str, before: datetime) -> int:
    """The webhooks consumer's retention sweep: delete the tenant's finished deliveries (and
    their attempts) last changed before `before`; how many deliveries went. Pending ones stay
    whatever their age: they are still being retried."""
    return WebhookRepository(session, tenant_id).sweep_deliveries(before)
