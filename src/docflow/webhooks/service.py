"""Use cases for webhook endpoints: create (the secret is shown once), list, read, change,
delete, read an endpoint's delivery log, and send a dead delivery again (its dead letter's
redrive and the redeliver request share one path)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from dbos import DBOSClient
from sqlalchemy.orm import Session

from docflow.errors import Conflict, InvalidInput, NotFound, get_one
from docflow.events import service as events_service
from docflow.events.envelopes import EVENT_TYPES, Envelope
from docflow.events.models import DeadLetter
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.projects import service as projects_service
from docflow.tenancy import TenantContext
from docflow.webhooks import jobs, signing
from docflow.webhooks.jobs import CONSUMER_NAME
from docflow.webhooks.models import (
    ENDPOINT_PREFIX,
    DeliveryStatus,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)
from docflow.webhooks.repository import WebhookRepository
from docflow.webhooks.urls import check_url

log = structlog.get_logger(__name__)

MAX_EVENT_TYPES = 50
MAX_DESCRIPTION = 500
REDELIVER_REASON = "redeliver requested through the API"


@dataclass(frozen=True)
class CreatedEndpoint:
    """A new endpoint and its secret, which is never shown again."""

    endpoint: WebhookEndpoint
    secret: str


@dataclass(frozen=True)
class DeliveryLogEntry:
    """One delivery and its attempts, oldest attempt first."""

    delivery: WebhookDelivery
    attempts: list[WebhookAttempt]


def clean_event_types(event_types: Sequence[str]) -> list[str]:
    """Distinct event types in the given order; InvalidInput (naming the valid types) on one
    docflow does not publish."""
    if len(event_types) > MAX_EVENT_TYPES:
        raise InvalidInput(f"at most {MAX_EVENT_TYPES} event types", field="event_types")
    cleaned: list[str] = []
    for value in event_types:
        value = value.strip()
        if value not in EVENT_TYPES:
            raise InvalidInput(
                f"unknown event type {value[:200]!r}; the event types are "
                + ", ".join(EVENT_TYPES),
                field="event_types",
                valid_event_types=list(EVENT_TYPES),
            )
        if value not in cleaned:
            cleaned.append(value)
    return cleaned


def _clean_description(description: str) -> str:
    if len(description) > MAX_DESCRIPTION:
        raise InvalidInput(
            f"description must be at most {MAX_DESCRIPTION} characters", field="description"
        )
    return description


def create_endpoint(
    session: Session,
    tenant: TenantContext,
    *,
    project_id: str,
    url: str,
    event_types: Sequence[str] = (),
    description: str = "",
    key_material: str,
    allow_private: bool,
) -> CreatedEndpoint:
    """A new enabled endpoint of one of the tenant's projects, with a fresh `whsec_` secret
    (stored sealed with `key_material`). NotFound for another tenant's project; InvalidInput for
    a refused URL (see `webhooks.urls`) or an unknown event type."""
    projects_service.get_project(session, tenant, project_id=project_id)
    secret = signing.new_secret()
    endpoint = WebhookEndpoint(
        tenant_id=tenant.tenant_id,
        id=ids.new_id(ENDPOINT_PREFIX),
        project_id=project_id,
        url=check_url(url, allow_private=allow_private),
        description=_clean_description(description),
        event_types=clean_event_types(event_types),
        secret_sealed=signing.seal(secret, key_material),
        enabled=True,
        disabled_reason=None,
    )
    session.add(endpoint)
    session.flush()
    log.info("webhook.endpoint_created", tenant_id=tenant.tenant_id, endpoint_id=endpoint.id)
    return CreatedEndpoint(endpoint, secret)


def list_endpoints(
    session: Session, tenant: TenantContext, *, project_id: str, cursor: str | None, limit: int
) -> Page[WebhookEndpoint]:
    """A project's endpoints, newest first; NotFound for another tenant's project."""
    projects_service.get_project(session, tenant, project_id=project_id)
    repo = WebhookRepository(session, tenant.tenant_id)
    return repo.endpoints_page(project_id, cursor=cursor, limit=limit)


def get_endpoint(session: Session, tenant: TenantContext, *, endpoint_id: str) -> WebhookEndpoint:
    """One of the tenant's endpoints; NotFound for a missing id or another tenant's."""
    repo = WebhookRepository(session, tenant.tenant_id)
    return get_one(repo.endpoint(endpoint_id), "webhook endpoint")


def update_endpoint(
    session: Session,
    tenant: TenantContext,
    *,
    endpoint_id: str,
    url: str | None = None,
    event_types: Sequence[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
    allow_private: bool,
) -> WebhookEndpoint:
    """Change an endpoint; enabling it again clears the reason it was disabled."""
    endpoint = get_endpoint(session, tenant, endpoint_id=endpoint_id)
    if url is not None:
        endpoint.url = check_url(url, allow_private=allow_private)
    if event_types is not None:
        endpoint.event_types = clean_event_types(event_types)
    if description is not None:
        endpoint.description = _clean_description(description)
    if enabled is not None:
        endpoint.enabled = enabled
        endpoint.disabled_reason = None if enabled else "disabled by the tenant"
    endpoint.updated_at = utcnow()
    session.flush()
    return endpoint


def delete_endpoint(session: Session, tenant: TenantContext, *, endpoint_id: str) -> None:
    """Delete an endpoint (its delivery log stays until retention sweeps it)."""
    session.delete(get_endpoint(session, tenant, endpoint_id=endpoint_id))
    session.flush()
    log.info("webhook.endpoint_deleted", tenant_id=tenant.tenant_id, endpoint_id=endpoint_id)


def redeliver(
    session: Session,
    client: DBOSClient,
    tenant: TenantContext,
    *,
    endpoint_id: str,
    delivery_id: str,
) -> WebhookDelivery:
    """Deliver a DEAD or SKIPPED delivery again (same event, same `webhook-id`, attempts
    continuing its log), once the receiver is back. A DEAD delivery's dead letter is redriven
    (recorded: by this API key, when, why), exactly as `docflow dead-letters redrive` does.
    NotFound for another tenant's endpoint or delivery; Conflict when the endpoint is
    disabled or the delivery is not DEAD or SKIPPED (a delivered or pending one is never sent
    twice this way)."""
    endpoint = get_endpoint(session, tenant, endpoint_id=endpoint_id)
    delivery = WebhookRepository(session, tenant.tenant_id).delivery(delivery_id)
    if delivery is None or delivery.endpoint_id != endpoint.id:
        raise NotFound("webhook delivery not found")
    letter = events_service.open_dead_letter(
        session, tenant, consumer=CONSUMER_NAME, target=endpoint.id, event_id=delivery.event_id
    )
    if letter is not None:
        actor = f"api key {tenant.key_id}" if tenant.key_id else "api"
        events_service.redrive(
            session, client, tenant, letter_id=letter.id, actor=actor, reason=REDELIVER_REASON
        )
        return delivery
    # No open dead letter: a SKIPPED delivery (its endpoint was off), or a DEAD one whose letter
    # was swept; the event is the first job's input.
    _check_resendable(session, tenant.tenant_id, delivery)
    try:
        event = jobs.first_job_event(client, endpoint_id=endpoint.id, event_id=delivery.event_id)
    except LookupError as exc:
        raise Conflict("the event of this delivery is no longer kept") from exc
    _check_receives(endpoint, event)
    job_id = jobs.redelivery_id(delivery.event_id, endpoint.id)
    _resend(session, client, tenant.tenant_id, delivery=delivery, event=event, job_id=job_id)
    return delivery


def redrive_dead_delivery(session: Session, client: DBOSClient, letter: DeadLetter) -> str:
    """The webhooks consumer's `redrive_target`: send a dead letter's event again to its
    endpoint alone (the letter's target), with the same `webhook-id`, as the job
    `webhook:{event_id}:{endpoint_id}:redrive:{letter id}`; that job's id. Conflict when the
    endpoint is deleted or disabled, no longer receives the event (`jobs.refusal`: its filter
    changed) or the delivery is no longer DEAD or SKIPPED."""
    endpoint_id = str(letter.target)
    delivery = WebhookRepository(session, letter.tenant_id).delivery_for(
        endpoint_id, letter.event_id
    )
    if delivery is None:
        raise Conflict("the delivery of this dead letter is no longer kept")
    endpoint = _check_resendable(session, letter.tenant_id, delivery)
    _check_receives(endpoint, letter.envelope)
    job_id = f"{jobs.workflow_id(letter.event_id, endpoint_id)}:redrive:{letter.id}"
    _resend(
        session, client, letter.tenant_id, delivery=delivery, event=letter.envelope, job_id=job_id
    )
    return job_id


def _check_resendable(
    session: Session, tenant_id: str, delivery: WebhookDelivery
) -> WebhookEndpoint:
    """The delivery's endpoint; Conflict when it is deleted or disabled or the delivery is not
    DEAD or SKIPPED."""
    endpoint = WebhookRepository(session, tenant_id).endpoint(delivery.endpoint_id)
    if endpoint is None:
        raise Conflict("the endpoint of this delivery was deleted")
    if not endpoint.enabled:
        raise Conflict("the endpoint is disabled: enable it before redelivering")
    if delivery.status not in (DeliveryStatus.DEAD, DeliveryStatus.SKIPPED):
        raise Conflict(
            f"only a DEAD or SKIPPED delivery is redelivered; this one is {delivery.status}"
        )
    return endpoint


def _check_receives(endpoint: WebhookEndpoint, event: dict[str, Any]) -> None:
    """Conflict (with the reason's code) when live delivery would not send `event` to the
    endpoint now (`jobs.refusal`): a resend never reaches an endpoint a replay would skip."""
    envelope = Envelope.from_dict(event)
    reason = jobs.refusal(endpoint, event_type=envelope.type, occurred_at=envelope.time)
    if reason is not None:
        raise Conflict(f"{jobs.REFUSALS[reason]}: it is not sent again", reason=reason)


def _resend(
    session: Session,
    client: DBOSClient,
    tenant_id: str,
    *,
    delivery: WebhookDelivery,
    event: dict[str, Any],
    job_id: str,
) -> None:
    """The one path that sends a delivery again: a new job in the session's transaction, and
    the delivery PENDING in the same one (a second request meanwhile is a Conflict)."""
    jobs.enqueue(
        session, client, tenant_id, endpoint_id=delivery.endpoint_id, event=event, job_id=job_id
    )
    delivery.status = DeliveryStatus.PENDING
    delivery.updated_at = utcnow()
    session.flush()
    log.info(
        "webhook.redelivery_requested",
        tenant_id=tenant_id,
        delivery_id=delivery.id,
        workflow_id=job_id,
    )


def delivery_log(
    session: Session, tenant: TenantContext, *, endpoint_id: str, cursor: str | None, limit: int
) -> Page[DeliveryLogEntry]:
    """An endpoint's deliveries, newest first, each with its attempts."""
    get_endpoint(session, tenant, endpoint_id=endpoint_id)
    repo = WebhookRepository(session, tenant.tenant_id)
    page = repo.deliveries_page(endpoint_id, cursor=cursor, limit=limit)
    attempts: dict[str, list[WebhookAttempt]] = {d.id: [] for d in page.items}
    for attempt in repo.attempts([d.id for d in page.items]):
        attempts[attempt.delivery_id].append(attempt)
    return page.map(lambda d: DeliveryLogEntry(d, attempts[d.id]))


def delivery_entry(
    session: Session, tenant: TenantContext, *, delivery_id: str
) -> DeliveryLogEntry:
    """One delivery with its attempts; NotFound for a missing id or another tenant's."""
    repo = WebhookRepository(session, tenant.tenant_id)
    delivery = get_one(repo.delivery(delivery_id), "webhook delivery")
    return DeliveryLogEntry(delivery, list(repo.attempts([delivery.id])))
