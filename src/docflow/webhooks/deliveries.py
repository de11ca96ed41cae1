"""The delivery log's writes, made by the delivery flow's steps under the event's tenant:
open a delivery, record each attempt with its outcome, write the dead letter of a delivery that
died (or whose job failed and was given up on), disable an endpoint that answered 410 Gone; and
the retention sweep of the log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session

from docflow.events.service import INTERNAL, add_dead_letter
from docflow.kit import ids
from docflow.webhooks import signing
from docflow.webhooks.models import (
    ATTEMPT_PREFIX,
    DELIVERY_PREFIX,
    DeliveryStatus,
    WebhookAttempt,
    WebhookDelivery,
)
from docflow.webhooks.repository import WebhookRepository
from docflow.webhooks.transport import AttemptResult

log = structlog.get_logger(__name__)

GONE = 410
# The consumer of the event registry that fans events out to endpoints: a dead delivery is its
# dead letter, with the endpoint as the letter's target.
CONSUMER_NAME = "webhooks"


@dataclass(frozen=True)
class Target:
    """Where and how to send: the endpoint's URL and its (unsealed) secret."""

    url: str
    secret: str


def matching_endpoints(
    session: Session, tenant_id: str, *, project_id: str, event_type: str
) -> list[str]:
    """Ids of the project's enabled endpoints whose filter accepts `event_type` (an empty
    filter accepts every type), oldest first."""
    endpoints = WebhookRepository(session, tenant_id).project_endpoints(project_id)
    return [
        e.id for e in endpoints if e.enabled and (not e.event_types or event_type in e.event_types)
    ]


def open_delivery(
    session: Session,
    tenant_id: str,
    *,
    endpoint_id: str,
    event_id: str,
    event_type: str,
    now: datetime,
) -> tuple[str, int]:
    """(delivery id, number of the next attempt) of the delivery of `event_id` to
    `endpoint_id`, created if new; a redelivery continues the attempt numbering."""
    repo = WebhookRepository(session, tenant_id)
    existing = repo.delivery_for(endpoint_id, event_id)
    if existing is not None:
        return existing.id, existing.attempts + 1
    delivery = WebhookDelivery(
        tenant_id=tenant_id,
        id=ids.new_id(DELIVERY_PREFIX),
        endpoint_id=endpoint_id,
        event_id=event_id,
        event_type=event_type,
        status=DeliveryStatus.PENDING,
        attempts=0,
        created_at=now,
        updated_at=now,
    )
    session.add(delivery)
    session.flush()
    return delivery.id, 1


def target(session: Session, tenant_id: str, endpoint_id: str, key_material: str) -> Target | None:
    """The endpoint's URL and secret, or None when it was deleted or disabled."""
    endpoint = WebhookRepository(session, tenant_id).endpoint(endpoint_id)
    if endpoint is None or not endpoint.enabled:
        return None
    return Target(endpoint.url, signing.unseal(endpoint.secret_sealed, key_material))


def skip(session: Session, tenant_id: str, delivery_id: str, *, now: datetime) -> None:
    """Mark the delivery SKIPPED: its endpoint is gone or disabled."""
    delivery = _delivery(session, tenant_id, delivery_id)
    delivery.status = DeliveryStatus.SKIPPED
    delivery.last_error = "the endpoint was disabled or deleted"
    delivery.next_attempt_at = None
    delivery.updated_at = now
    session.flush()


def record_attempt(
    session: Session,
    tenant_id: str,
    *,
    delivery_id: str,
    number: int,
    result: AttemptResult,
    status: str,
    attempted_at: datetime,
    next_retry_at: datetime | None,
) -> None:
    """Write attempt `number` (again, if a crash made the step run twice) and the delivery's
    new state `status` (PENDING while retries remain)."""
    repo = WebhookRepository(session, tenant_id)
    attempt = repo.attempt(delivery_id, number)
    if attempt is None:
        attempt = WebhookAttempt(
            tenant_id=tenant_id, id=ids.new_id(ATTEMPT_PREFIX), delivery_id=delivery_id
        )
        attempt.attempt = number
        session.add(attempt)
    attempt.status_code = result.status_code
    attempt.latency_ms = result.latency_ms
    attempt.error = result.error
    attempt.attempted_at = attempted_at
    attempt.next_retry_at = next_retry_at
    delivery = _delivery(session, tenant_id, delivery_id)
    delivery.status = status
    delivery.attempts = max(delivery.attempts, number)
    delivery.last_status_code = result.status_code
    delivery.last_error = result.error
    delivery.next_attempt_at = next_retry_at
    delivery.updated_at = attempted_at
    session.flush()


def dead_letter(
    session: Session,
    *,
    endpoint_id: str,
    event: dict[str, Any],
    result: AttemptResult,
    attempts: int,
    workflow_id: str,
) -> str:
    """Record, in the session's transaction (the one that marks the delivery DEAD), the dead
    letter of consumer `webhooks` for the endpoint, with the last error and its category; the
    letter's id (one per delivery job `workflow_id`)."""
    return add_dead_letter(
        session,
        consumer_name=CONSUMER_NAME,
        raw=event,
        error=result.error or f"HTTP {result.status_code}",
        category=result.category,
        attempts=attempts,
        workflow_id=workflow_id,
        target=endpoint_id,
    )


def give_up(
    session: Session,
    tenant_id: str,
    *,
    endpoint_id: str,
    event: dict[str, Any],
    error: str,
    workflow_id: str,
    now: datetime,
) -> str | None:
    """Mark the delivery of `event` to the endpoint DEAD with `error` and write its dead letter
    (category `internal`), in the session's transaction: its job `workflow_id` failed and was
    given up on (see `docflow.reconciler`). The letter's id; None when the delivery had ended
    already. A job that failed before opening the delivery opens it first."""
    existing = WebhookRepository(session, tenant_id).delivery_for(endpoint_id, str(event["id"]))
    if existing is None:
        delivery_id, _ = open_delivery(
            session,
            tenant_id,
            endpoint_id=endpoint_id,
            event_id=str(event["id"]),
            event_type=str(event["type"]),
            now=now,
        )
        existing = _delivery(session, tenant_id, delivery_id)
    if existing.status != DeliveryStatus.PENDING:
        return None
    existing.status = DeliveryStatus.DEAD
    existing.last_error = error
    existing.next_attempt_at = None
    existing.updated_at = now
    session.flush()
    return add_dead_letter(
        session,
        consumer_name=CONSUMER_NAME,
        raw=event,
        error=error,
        category=INTERNAL,
        attempts=existing.attempts,
        workflow_id=workflow_id,
        target=endpoint_id,
    )


def sweep(session: Session, tenant_id: str, before: datetime) -> int:
    """The webhooks consumer's retention sweep: delete the tenant's finished deliveries (and
    their attempts) last changed before `before`; how many deliveries went. Pending ones stay
    whatever their age: they are still being retried."""
    return WebhookRepository(session, tenant_id).sweep_deliveries(before)


def disable_endpoint(
    session: Session, tenant_id: str, endpoint_id: str, *, reason: str, now: datetime
) -> None:
    """Disable an endpoint (no new deliveries, pending ones are skipped) with `reason`."""
    endpoint = WebhookRepository(session, tenant_id).endpoint(endpoint_id)
    if endpoint is None or not endpoint.enabled:
        return
    endpoint.enabled = False
    endpoint.disabled_reason = reason
    endpoint.updated_at = now
    session.flush()
    log.warning("webhook.endpoint_disabled", tenant_id=tenant_id, endpoint_id=endpoint_id)


def _delivery(session: Session, tenant_id: str, delivery_id: str) -> WebhookDelivery:
    delivery = WebhookRepository(session, tenant_id).delivery(delivery_id)
    if delivery is None:
        raise LookupError(f"webhook delivery {delivery_id} not found")
    return delivery
