"""HTTP fixtures: the real app on the test database, clients, and tenants with real API keys.

Requests commit (the app owns its transactions), so data made through the API stays for the
whole test session: tests use unique names and only look at what they created.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from dbos import DBOS
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.config import Settings
from docflow.main import create_app
from docflow.system_db import migrate_system_database
from docflow.tenants import service as tenants_service
from support.db_fixtures import APP_ROLE, on_postgres

PUBLIC_BASE_URL = "https://docflow.test"


@dataclass(frozen=True)
class ApiTenant:
    """A committed tenant and one of its API keys."""

    tenant_id: str
    key_id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def make_api_tenant(factory: sessionmaker[Session], name: str) -> ApiTenant:
    """Create and commit a tenant with a full-scope API key, through the services.

    A read-then-write transaction, so it goes through the write session factory of `factory`'s
    engine whatever `factory` is: on a database a running server or runtime also writes, a
    deferred SQLite transaction would fail at once when one of their commits lands between."""
    with db.make_write_session_factory(factory.kw["bind"])() as session:
        tenant = tenants_service.create_tenant(session, name=name)
        key, token = tenants_service.create_api_key(session, tenant.id, name="tests", scopes=["*"])
        result = ApiTenant(tenant_id=tenant.id, key_id=key.id, token=token)
        session.commit()
    return result


@pytest.fixture(scope="session")
def api_settings(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(
        env="test",
        home=home,
        sources_root=tmp_path_factory.mktemp("sources"),  # out of the home (its keys)
        database_url=db_url,
        public_base_url=PUBLIC_BASE_URL,
        max_documents_per_batch=20,
        max_document_bytes=10 * 1024 * 1024,
        # A batch's progress stream ends within a second in tests (one that is not terminal).
        events_stream_poll_seconds=0.1,
        events_stream_max_seconds=1.0,
    )


@pytest.fixture(scope="session")
def app(api_settings: Settings, engine: Engine, owner_db_url: str) -> FastAPI:
    """The real application on the test database (the application role on PostgreSQL), with
    DBOS's tables, which it enqueues into and reads the workflows' state from."""
    if on_postgres():
        settings = api_settings.model_copy(update={"migration_database_url": owner_db_url})
        migrate_system_database(settings, app_role=APP_ROLE)
    else:  # a launch would create them; this app only enqueues
        DBOS.migrate(owner_db_url)
    return create_app(api_settings, engine=engine)


@pytest.fixture(scope="session")
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def tenant_key_a(session_factory: sessionmaker[Session]) -> ApiTenant:
    return make_api_tenant(session_factory, f"Tenant A {secrets.token_hex(4)}")


@pytest.fixture
def tenant_key_b(session_factory: sessionmaker[Session]) -> ApiTenant:
    return make_api_tenant(session_factory, f"Tenant B {secrets.token_hex(4)}")


def workflow_body(name: str = "invoice", **overrides: Any) -> dict[str, Any]:
    """A small valid extraction workflow definition, as JSON. Its fields are decided by the
    thresholds until reviews measure them (`cold_start: thresholds`), so a test about anything
    but earned trust sees documents pass as the thresholds say (docs/accuracy.md)."""
    body: dict[str, Any] = {
        "name": name,
        "fields": [
            {
                "name": "invoice_number",
                "type": "string",
                "locators": [{"kind": "label", "labels": ["Invoice No"]}],
            },
            {
                "name": "total",
                "type": "money",
                "locators": [{"kind": "label", "labels": ["Total"]}],
            },
        ],
        "confidence_threshold": 0.5,
        "review_threshold": 0.8,
        "cold_start": "thresholds",
    }
    body.update(overrides)
    return body


def documents_body(count: int, *, size: int = 1000) -> list[dict[str, Any]]:
    return [
        {"name": f"doc-{i:03d}.pdf", "content_type": "application/pdf", "size": size}
        for i in range(count)
    ]


def ok(response: httpx.Response, status: int) -> dict[str, Any]:
    """The JSON body of `response`, after checking its status (showing the body if wrong)."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


def post_project(client: TestClient, tenant: ApiTenant, name: str = "Invoices") -> dict[str, Any]:
    return ok(client.post("/v1/projects", json={"name": name}, headers=tenant.headers), 201)


def post_workflow(
    client: TestClient, tenant: ApiTenant, project_id: str, name: str = "invoice"
) -> dict[str, Any]:
    response = client.post(
        f"/v1/projects/{project_id}/workflows", json=workflow_body(name), headers=tenant.headers
    )
    return ok(response, 201)


def post_batch(
    client: TestClient,
    tenant: ApiTenant,
    project_id: str,
    workflow_id: str,
    *,
    documents: int = 2,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    body = {
        "project_id": project_id,
        "workflow_id": workflow_id,
        "documents": documents_body(documents),
    }
    response = client.post("/v1/batches", json=body, headers={**tenant.headers, **(headers or {})})
    return ok(response, 202)


@dataclass(frozen=True)
class TenantObjects:
    """One of everything, created through the API for one tenant."""

    tenant: ApiTenant
    project: dict[str, Any]
    workflow: dict[str, Any]
    batch: dict[str, Any]

    @property
    def document_id(self) -> str:
        return str(self.batch["documents"][0]["id"])


def make_objects(client: TestClient, tenant: ApiTenant) -> TenantObjects:
    project = post_project(client, tenant)
    workflow = post_workflow(client, tenant, project["id"])
    batch = post_batch(client, tenant, project["id"], workflow["id"])
    return TenantObjects(tenant=tenant, project=project, workflow=workflow, batch=batch)


def collect(
    client: TestClient,
    url: str,
    headers: dict[str, str],
    limit: int,
    query: dict[str, str] | None = None,
) -> list[Any]:
    """Every item of a paginated list, following `next_cursor`; checks page sizes on the way."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):
        params: dict[str, Any] = {**(query or {}), "limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        page = ok(client.get(url, params=params, headers=headers), 200)
        assert len(page["items"]) <= limit
        items.extend(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return items
        assert len(page["items"]) == limit
    raise AssertionError("pagination did not end")
