"""Queries for webhook endpoints, deliveries and attempts (all under one tenant)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from docflow.events.envelopes import DOCUMENT_DOWNSTREAM_CHANGED
from docflow.events.models import OutboxEvent
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.tenancy import TenantRepository
from docflow.webhooks.models import (
    DeliveryStatus,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)

ENDPOINTS_NEWEST_FIRST = (SortKey(WebhookEndpoint.id, descending=True),)
DELIVERIES_NEWEST_FIRST = (SortKey(WebhookDelivery.id, descending=True),)


class WebhookRepository(TenantRepository):
    def endpoint(self, endpoint_id: str) -> WebhookEndpoint | None:
        stmt = self.base(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id)
        return self.session.scalars(stmt).first()

    def endpoints_page(
        self, project_id: str, *, cursor: str | None, limit: int | None
    ) -> Page[WebhookEndpoint]:
        """A project's endpoints, newest first (ix_webhook_endpoints_project)."""
        stmt = self.base(WebhookEndpoint).where(WebhookEndpoint.project_id == project_id)
        return keyset_page(
            self.session, stmt, order=ENDPOINTS_NEWEST_FIRST, cursor=cursor, limit=limit
        )

    def project_endpoints(self, project_id: str) -> Sequence[WebhookEndpoint]:
        """Every endpoint of a project, oldest first (the fan-out of one event)."""
        stmt = (
            self.base(WebhookEndpoint)
            .where(WebhookEndpoint.project_id == project_id)
            .order_by(WebhookEndpoint.id)
        )
        return self.session.scalars(stmt).all()

    def delivery(self, delivery_id: str) -> WebhookDelivery | None:
        stmt = self.base(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
        return self.session.scalars(stmt).first()

    def lock_delivery(self, delivery_id: str) -> WebhookDelivery | None:
        """The delivery, locked until the transaction ends (PostgreSQL): a deletion of it
        (`delete_event_deliveries`) waits for the holder, or the holder finds it gone."""
        stmt = self.base(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
        return self.session.scalars(stmt.with_for_update()).first()

    def delivery_for(self, endpoint_id: str, event_id: str) -> WebhookDelivery | None:
        stmt = self.base(WebhookDelivery).where(
            WebhookDelivery.endpoint_id == endpoint_id, WebhookDelivery.event_id == event_id
        )
        return self.session.scalars(stmt).first()

    def deliveries_page(
        self, endpoint_id: str, *, cursor: str | None, limit: int | None
    ) -> Page[WebhookDelivery]:
        """An endpoint's deliveries, newest first (ix_webhook_deliveries_endpoint)."""
        stmt = self.base(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint_id)
        return keyset_page(
            self.session, stmt, order=DELIVERIES_NEWEST_FIRST, cursor=cursor, limit=limit
        )

    def subject_events(self, subjects: Sequence[str]) -> dict[str, str]:
        """The subject of each event about these subjects, by event id
        (ix_outbox_events_subject), but for the announcements of their downstream state,
        whose deliveries must not change the state they announce."""
        if not subjects:
            return {}
        stmt = (
            self.base(OutboxEvent)
            .with_only_columns(OutboxEvent.id, OutboxEvent.subject)
            .where(
                OutboxEvent.subject.in_(subjects),
                OutboxEvent.type != DOCUMENT_DOWNSTREAM_CHANGED,
            )
        )
        return {str(r[0]): str(r[1]) for r in self.session.execute(stmt)}

    def event_deliveries(self, event_ids: Sequence[str]) -> Sequence[tuple[str, str, datetime]]:
        """(event id, status, created) of the deliveries of these events
        (ix_webhook_deliveries_event)."""
        if not event_ids:
            return []
        stmt = (
            self.base(WebhookDelivery)
            .with_only_columns(
                WebhookDelivery.event_id, WebhookDelivery.status, WebhookDelivery.created_at
            )
            .where(WebhookDelivery.event_id.in_(event_ids))
        )
        return [(str(r[0]), str(r[1]), r[2]) for r in self.session.execute(stmt)]

    def attempts(self, delivery_ids: Sequence[str]) -> Sequence[WebhookAttempt]:
        """The attempts of these deliveries, in attempt order."""
        if not delivery_ids:
            return []
        stmt = (
            self.base(WebhookAttempt)
            .where(WebhookAttempt.delivery_id.in_(delivery_ids))
            .order_by(WebhookAttempt.delivery_id, WebhookAttempt.attempt)
        )
        return self.session.scalars(stmt).all()

    def attempt(self, delivery_id: str, number: int) -> WebhookAttempt | None:
        stmt = self.base(WebhookAttempt).where(
            WebhookAttempt.delivery_id == delivery_id, WebhookAttempt.attempt == number
        )
        return self.session.scalars(stmt).first()

    def delete_event_deliveries(self, event_ids: Sequence[str]) -> int:
        """Delete the deliveries of these events whatever their status, their attempts with
        them (ON DELETE CASCADE); how many deliveries went (ix_webhook_deliveries_event)."""
        if not event_ids:
            return 0
        stmt = (
            self.scoped_delete(WebhookDelivery)
            .where(WebhookDelivery.event_id.in_(event_ids))
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0))

    def sweep_deliveries(self, before: datetime) -> int:
        """Delete the tenant's finished deliveries (not PENDING) last changed before `before`,
        their attempts with them (ON DELETE CASCADE); how many deliveries went."""
        stmt = (
            self.scoped_delete(WebhookDelivery)
            .where(
                WebhookDelivery.status != DeliveryStatus.PENDING,
                WebhookDelivery.updated_at < before,
            )
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0))
