"""HTTP fixtures: the real app on the test database, clients, and tenants with real API keys.

Requests commit (the app owns its transactions), so data made through the API stays for the
whole test session: tests use unique names and only look at what they created.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Settings
from docflow.main import create_app
from docflow.tenants import service as tenants_service

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
    """Create and commit a tenant with a full-scope API key, through the services."""
    with factory() as session:
        tenant = tenants_service.create_tenant(session, name=name)
        key, token = tenants_service.create_api_key(session, tenant.id, name="tests", scopes=["*"])
        result = ApiTenant(tenant_id=tenant.id, key_id=key.id, token=token)
        session.commit()
    return result


@pytest.fixture(scope="session")
def api_settings(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        env="test",
        home=tmp_path_factory.mktemp("home"),
        database_url=db_url,
        public_base_url=PUBLIC_BASE_URL,
        max_documents_per_batch=20,
        max_document_bytes=10 * 1024 * 1024,
    )


@pytest.fixture(scope="session")
def app(api_settings: Settings, engine: Engine) -> FastAPI:
    """The real application on the test database (the application role on PostgreSQL)."""
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
