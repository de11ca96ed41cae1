"""The hourly retention sweep deletes finished deliveries (and their attempts) older than the
events retention, through the webhooks consumer's `sweep`; a pending delivery stays whatever its
age, and a recent one stays."""

from __future__ import annotations

from datetime import datetime, timedelta

from docflow.events import steps as events_steps
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.runtime.context import services
from docflow.webhooks import deliveries
from docflow.webhooks.models import DeliveryStatus
from docflow.webhooks.repository import WebhookRepository
from docflow.webhooks.transport import AttemptResult
from support.dbos_fixtures import DbosEnv

from .conftest import Receiver
from .helpers import setup_endpoint


def _delivery(tenant_id: str, endpoint_id: str, status: str, when: datetime) -> str:
    with services().write_session() as session, session.begin():
        delivery_id, number = deliveries.open_delivery(
            session,
            tenant_id,
            endpoint_id=endpoint_id,
            event_id=ids.new_id("evt"),
            event_type="docflow.batch.completed.v1",
            now=when,
        )
        deliveries.record_attempt(
            session,
            tenant_id,
            delivery_id=delivery_id,
            number=number,
            result=AttemptResult(503, 12, "HTTP 503", "http_5xx"),
            status=status,
            attempted_at=when,
            next_retry_at=None,
        )
    return delivery_id


def test_the_sweep_deletes_finished_deliveries_older_than_the_retention(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, _, endpoint = setup_endpoint(webhook_env, receiver)
    tenant_id, endpoint_id = tenant.tenant_id, endpoint["id"]
    old, recent = utcnow() - timedelta(days=20), utcnow() - timedelta(days=2)
    old_delivered = _delivery(tenant_id, endpoint_id, DeliveryStatus.DELIVERED, old)
    old_dead = _delivery(tenant_id, endpoint_id, DeliveryStatus.DEAD, old)
    old_pending = _delivery(tenant_id, endpoint_id, DeliveryStatus.PENDING, old)
    recent_dead = _delivery(tenant_id, endpoint_id, DeliveryStatus.DEAD, recent)

    swept = events_steps.sweep_all(services().write_factory, retention_days=14)
    assert swept.consumer_records >= 2
    with webhook_env.session_factory() as session:
        repo = WebhookRepository(session, tenant_id)
        assert repo.delivery(old_delivered) is None and repo.delivery(old_dead) is None
        assert repo.attempts([old_delivered, old_dead]) == []
        kept = [old_pending, recent_dead]
        assert all(repo.delivery(d) is not None for d in kept)
        assert [a.delivery_id for a in repo.attempts(kept)] == sorted(kept)
