"""Durable webhook delivery: one DBOS workflow per (event, endpoint).

`start_deliveries` fans an event out to the project's matching endpoints, each delivery its own
workflow with the id `webhook:{event_id}:{endpoint_id}`: starting it twice (a redelivered or
replayed event) is a no-op, and a slow or failing endpoint never holds up another endpoint or
another event. A delivery makes up to `settings.webhook_max_attempts` attempts; between two it
sleeps durably (DBOS.sleep survives restarts) for the next value of
`settings.webhook_retry_seconds` with random jitter. Every attempt is signed afresh (new
timestamp) with the same `webhook-id`, the event id. 2xx delivers; 410 Gone disables the
endpoint; after the last failed attempt the delivery is DEAD with the last error, and a dead
letter of consumer `webhooks` for the endpoint is written in the same transaction (redriving it
runs a new job for this endpoint alone, `{workflow id}:redrive:{letter id}`). The steps retry
transient database errors (`docflow.retry`). An attempt whose result could not be recorded (a
crash or a lost connection after sending) is sent again with the same `webhook-id`: receivers
deduplicate on it.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from dbos import DBOS, DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow.config import Settings
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.retry import db_step
from docflow.runtime import context
from docflow.webhooks import deliveries, signing, transport
from docflow.webhooks.models import DeliveryStatus

log = structlog.get_logger(__name__)

DELIVER_FLOW = "webhooks.deliver"
# One delivery per (event, endpoint). No concurrency limit: a delivery spends most of its life in
# a durable sleep between attempts, and a slot held while sleeping would starve others.
WEBHOOKS_QUEUE = "webhooks"
RETRY = "retry"


def workflow_id(event_id: str, endpoint_id: str) -> str:
    """The delivery workflow's id: one delivery per (event, endpoint), ever."""
    return f"webhook:{event_id}:{endpoint_id}"


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


def start_deliveries(
    session: Session, client: DBOSClient, tenant_id: str, event: dict[str, Any]
) -> list[str]:
    """Enqueue, in the session's transaction, one delivery workflow per matching endpoint of
    the event's project (`data.project_id`); the workflow ids. An id that already exists (the
    same event again) is a no-op, so this is safe to repeat."""
    data = event.get("data") or {}
    project_id = data.get("project_id")
    if not isinstance(project_id, str):
        return []
    endpoint_ids = deliveries.matching_endpoints(
        session, tenant_id, project_id=project_id, event_type=str(event["type"])
    )
    started = []
    for endpoint_id in endpoint_ids:
        options: EnqueueOptions = {
            "workflow_name": DELIVER_FLOW,
            "queue_name": WEBHOOKS_QUEUE,
            "workflow_id": workflow_id(str(event["id"]), endpoint_id),
        }
        client.enqueue_in_transaction(session, options, tenant_id, endpoint_id, event)
        started.append(options["workflow_id"])
    log.info("webhook.deliveries_enqueued", tenant_id=tenant_id, count=len(started))
    return started


def first_job_event(client: DBOSClient, *, endpoint_id: str, event_id: str) -> dict[str, Any]:
    """The event the first delivery job of (event, endpoint) was given; LookupError when that
    job is no longer kept."""
    first = workflow_id(event_id, endpoint_id)
    found = client.list_workflows(workflow_ids=[first], load_input=True)
    if not found or not found[0].input or len(found[0].input["args"]) != 3:
        raise LookupError(f"the delivery job {first} is no longer kept")
    event: dict[str, Any] = found[0].input["args"][2]
    return event


def redelivery_id(event_id: str, endpoint_id: str) -> str:
    """A fresh id for a redelivery job of (event, endpoint) not tied to a dead letter."""
    return f"{workflow_id(event_id, endpoint_id)}:redelivery:{ids.ulid()}"


def enqueue_again(
    session: Session,
    client: DBOSClient,
    tenant_id: str,
    *,
    endpoint_id: str,
    event: dict[str, Any],
    job_id: str,
) -> None:
    """Enqueue, in the session's transaction, another delivery job `job_id` of an event already
    handed to this endpoint: its attempts continue the delivery's log, with the same
    `webhook-id`. A `job_id` that exists already is a no-op."""
    options: EnqueueOptions = {
        "workflow_name": DELIVER_FLOW,
        "queue_name": WEBHOOKS_QUEUE,
        "workflow_id": job_id,
    }
    client.enqueue_in_transaction(session, options, tenant_id, endpoint_id, event)


@DBOS.workflow(name=DELIVER_FLOW, max_recovery_attempts=100)
def deliver(tenant_id: str, endpoint_id: str, event: dict[str, Any]) -> str:
    """Deliver `event` to one endpoint; the delivery's final status (DELIVERED, DEAD, SKIPPED)."""
    delivery_id, first = _open(tenant_id, endpoint_id, str(event["id"]), str(event["type"]))
    last = first + _max_attempts() - 1
    for number in range(first, last + 1):
        outcome, delay = _attempt(tenant_id, endpoint_id, delivery_id, event, (number, last))
        if outcome != RETRY:
            return outcome
        DBOS.sleep(delay)
    return DeliveryStatus.DEAD


@DBOS.step(name="webhooks.max_attempts")
def _max_attempts() -> int:
    # A step, so a delivery keeps the limit it started with when the setting changes.
    return context.services().settings.webhook_max_attempts


@db_step("webhooks.open")
def _open(tenant_id: str, endpoint_id: str, event_id: str, event_type: str) -> tuple[str, int]:
    with context.services().write_session() as session:
        opened = deliveries.open_delivery(
            session,
            tenant_id,
            endpoint_id=endpoint_id,
            event_id=event_id,
            event_type=event_type,
            now=utcnow(),
        )
        session.commit()
    return opened


@db_step("webhooks.attempt")
def _attempt(
    tenant_id: str,
    endpoint_id: str,
    delivery_id: str,
    event: dict[str, Any],
    attempt: tuple[int, int],
) -> tuple[str, float]:
    """Send attempt `attempt` = (number, last number) and record it; (outcome, seconds to
    wait before the next one). The outcome is RETRY or the delivery's final status."""
    services = context.services()
    settings = services.settings
    sent = _Sent(tenant_id, endpoint_id, delivery_id, event, attempt)
    try:
        with services.session_factory() as session:
            found = deliveries.target(session, tenant_id, endpoint_id, settings.signing_secret)
    except ValueError as exc:
        # The secret was sealed under another signing secret: nothing can be signed, and the
        # attempt says so in the log instead of failing the job.
        unreadable = transport.AttemptResult(None, 0, str(exc), transport.SECRET)
        return _record(settings, sent, unreadable)
    if found is None:
        with services.write_session() as session:
            deliveries.skip(session, tenant_id, delivery_id, now=utcnow())
            session.commit()
        return DeliveryStatus.SKIPPED, 0.0
    result = _send(settings, found, str(event["id"]), encode(event))
    return _record(settings, sent, result)


@dataclass(frozen=True)
class _Sent:
    """Which attempt of which delivery a result is for."""

    tenant_id: str
    endpoint_id: str
    delivery_id: str
    event: dict[str, Any]
    attempt: tuple[int, int]


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


def _record(settings: Settings, sent: _Sent, result: transport.AttemptResult) -> tuple[str, float]:
    """Write the attempt and the delivery's new state in one transaction, with the dead letter
    when the delivery died and the endpoint's disabling on a 410."""
    now = utcnow()
    tenant_id, number = sent.tenant_id, sent.attempt[0]
    outcome, delay, next_at = _outcome(settings, result, sent.attempt, now)
    with context.services().write_session() as session:
        deliveries.record_attempt(
            session,
            tenant_id,
            delivery_id=sent.delivery_id,
            number=number,
            result=result,
            status=DeliveryStatus.PENDING if outcome == RETRY else outcome,
            attempted_at=now,
            next_retry_at=next_at,
        )
        if outcome == DeliveryStatus.DEAD:
            deliveries.dead_letter(
                session,
                endpoint_id=sent.endpoint_id,
                event=sent.event,
                result=result,
                attempts=number,
                workflow_id=DBOS.workflow_id or "",
            )
        if result.status_code == deliveries.GONE:
            reason = "the endpoint answered 410 Gone"
            deliveries.disable_endpoint(
                session, tenant_id, sent.endpoint_id, reason=reason, now=now
            )
        session.commit()
    log.info(
        "webhook.attempted",
        tenant_id=tenant_id,
        delivery_id=sent.delivery_id,
        attempt=number,
        status_code=result.status_code,
        outcome=outcome,
    )
    return outcome, delay


def _outcome(
    settings: Settings, result: transport.AttemptResult, attempt: tuple[int, int], now: datetime
) -> tuple[str, float, datetime | None]:
    number, max_attempts = attempt
    if result.delivered:
        return DeliveryStatus.DELIVERED, 0.0, None
    if result.status_code == deliveries.GONE or number >= max_attempts:
        return DeliveryStatus.DEAD, 0.0, None
    delay = retry_delay(settings, number)
    return RETRY, delay, now + timedelta(seconds=delay)


def _queues(settings: Settings) -> list[context.Queue]:
    return [context.Queue(WEBHOOKS_QUEUE, polling_interval_sec=settings.background_polling_seconds)]


LAUNCH = context.Flows(queues=_queues)
