"""Helpers of the webhook delivery tests: an event for a project, an endpoint made through the
API, deliveries started as the webhooks consumer starts them, their results and the log."""

from __future__ import annotations

import socket
from datetime import datetime
from typing import Any

from dbos import DBOS

from docflow.db import bind_tenant
from docflow.events.envelopes import DOCUMENT_COMPLETED, Envelope, source_for
from docflow.events.models import OutboxEvent
from docflow.events.repository import OutboxRepository
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.runtime import context
from docflow.webhooks import jobs
from support.api_fixtures import ApiTenant, ok, post_project
from support.dbos_fixtures import DbosEnv

from .conftest import Receiver


def make_event(
    tenant_id: str,
    project_id: str,
    event_type: str = DOCUMENT_COMPLETED,
    *,
    time: datetime | None = None,
) -> dict[str, Any]:
    """A new event of the project (occurred now, or at `time`), as the publisher hands it to
    the webhooks consumer: in the outbox, published (a delivery job opens a delivery only for
    an event the outbox holds)."""
    envelope = Envelope(
        id=ids.new_id("evt"),
        source=source_for(tenant_id),
        type=event_type,
        time=time or utcnow(),
        subject="doc_1",
        data={"tenant_id": tenant_id, "project_id": project_id, "document_id": "doc_1"},
    )
    row = OutboxEvent(
        tenant_id=tenant_id,
        id=envelope.id,
        type=envelope.type,
        source=envelope.source,
        subject=envelope.subject,
        data=envelope.data,
        occurred_at=envelope.time,
        published_at=envelope.time,
    )
    with context.services().write_session() as session, session.begin():
        bind_tenant(session, tenant_id)
        OutboxRepository(session, tenant_id).insert(row)
    return envelope.to_dict()


def add_endpoint(
    env: DbosEnv, tenant: ApiTenant, project_id: str, url: str, **body: Any
) -> dict[str, Any]:
    """An endpoint of the project (the answer holds its secret)."""
    response = env.client.post(
        f"/v1/projects/{project_id}/webhooks", json={"url": url, **body}, headers=tenant.headers
    )
    return ok(response, 201)


def publish(env: DbosEnv, tenant: ApiTenant, event: dict[str, Any]) -> list[str]:
    """Start the event's deliveries (committed); their workflow ids. In a write session, as the
    consumer's step does: it reads the endpoints and then writes, which on SQLite must hold the
    write lock from the start (a read upgraded to a write while a worker writes is refused)."""
    with context.services().write_session() as session, session.begin():
        return jobs.start_deliveries(
            session, env.client.app.state.dbos_client, tenant.tenant_id, event
        )


def finish(workflow_ids: list[str]) -> list[str]:
    """The final statuses of these delivery jobs, once they end."""
    return [DBOS.retrieve_workflow(w).get_result() for w in workflow_ids]


def delivery_log(env: DbosEnv, tenant: ApiTenant, endpoint_id: str) -> list[dict[str, Any]]:
    """The endpoint's delivery log through the API, newest first."""
    url = f"/v1/webhooks/{endpoint_id}/deliveries"
    items: list[dict[str, Any]] = ok(env.client.get(url, headers=tenant.headers), 200)["items"]
    return items


def closed_port() -> int:
    """A port of 127.0.0.1 nobody listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def setup_endpoint(
    env: DbosEnv, receiver: Receiver, **body: Any
) -> tuple[ApiTenant, str, dict[str, Any]]:
    """A new tenant and project with one endpoint pointing at the receiver."""
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    endpoint = add_endpoint(env, tenant, project["id"], receiver.url, **body)
    return tenant, project["id"], endpoint
