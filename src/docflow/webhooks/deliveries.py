"""The delivery log's writes, made by the delivery job's steps (`webhooks.steps`) under the
event's tenant, each in the caller's transaction: open a delivery, record each attempt with its
outcome, write the dead letter of a delivery that died, disable an endpoint that answered 410
Gone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session

from docflow.events.service import add_dead_letter
from docflow.kit import ids
from docflow.observability.metrics import WEBHOOK_ATTEMPTS, count_after_commit
from docflow.webhooks import signing
from docflow.webhooks.jobs import CONSUMER_NAME
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


@dataclass(frozen=True)
class Target:
    """Where and how to send: the endpoint's URL and its (unsealed) secret."""

    url: str
    secret: str


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
    delivery = get_delivery(session, tenant_id, delivery_id)
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
    delivery = get_delivery(session, tenant_id, delivery_id)
    delivery.status = status
    delivery.attempts = max(delivery.attempts, number)
    delivery.last_status_code = result.status_code
    delivery.last_error = result.error
    delivery.next_attempt_at = next_retry_at
    delivery.updated_at = attempted_at
    session.flush()
    outcome = "delivered" if result.delivered else result.category
    count_after_commit(session, WEBHOOK_ATTEMPTS, outcome=outcome)


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


def get_delivery(session: Session, tenant_id: str, delivery_id: str) -> WebhookDelivery:
    """The tenant's delivery `delivery_id`; LookupError when it is gone."""
    delivery = WebhookRepository(session, tenant_id).delivery(delivery_id)
    if delivery is None:
        raise LookupError(f"webhook delivery {delivery_id} not found")
    return delivery
