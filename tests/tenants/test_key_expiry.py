"""API keys with an expiry: created through the API and the CLI, refused with 401
`api_key_expired` once it passes (also from a process's cache of verified keys), and an expiry
in the past or without an offset is a 422 naming `expires_at`."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from docflow.cli import app as cli
from docflow.kit.clock import utcnow
from docflow.tenants.models import ApiKey
from docflow.tenants.repository import ApiKeyRepository
from docflow.tenants.service import verified_keys
from support.api_fixtures import ApiTenant


def expire(factory: sessionmaker[Session], tenant: ApiTenant, key_id: str) -> None:
    with factory() as session:
        key = ApiKeyRepository(session, tenant.tenant_id).get(key_id)
        assert isinstance(key, ApiKey)
        key.expires_at = utcnow() - timedelta(seconds=1)
        session.commit()


def test_an_expired_key_answers_401_api_key_expired(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    expires = (utcnow() + timedelta(days=30)).isoformat()
    made = client.post(
        "/v1/api-keys",
        json={"name": "for a month", "scopes": ["read"], "expires_at": expires},
        headers=tenant_key_a.headers,
    )
    assert made.status_code == 201, made.text
    assert made.json()["expires_at"] is not None
    headers = {"Authorization": f"Bearer {made.json()['key']}"}
    assert client.get("/v1/projects", headers=headers).status_code == 200  # now cached
    expire(session_factory, tenant_key_a, made.json()["id"])
    verified_keys.forget(made.json()["id"])  # as after VERIFIED_KEY_TTL_SECONDS
    refused = client.get("/v1/projects", headers=headers)
    assert refused.status_code == 401
    assert refused.json()["code"] == "api_key_expired"
    listed = client.get("/v1/api-keys", headers=tenant_key_a.headers).json()["items"]
    assert next(k for k in listed if k["id"] == made.json()["id"])["expires_at"] is not None


def test_a_key_the_process_trusts_still_expires_on_time(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    soon = (utcnow() + timedelta(seconds=1.5)).isoformat()
    made = client.post(
        "/v1/api-keys",
        json={"name": "brief", "scopes": ["read"], "expires_at": soon},
        headers=tenant_key_a.headers,
    )
    headers = {"Authorization": f"Bearer {made.json()['key']}"}
    assert client.get("/v1/projects", headers=headers).status_code == 200
    time.sleep(1.6)  # within the verified-key cache's time, past the expiry
    assert client.get("/v1/projects", headers=headers).json()["code"] == "api_key_expired"


def test_an_expiry_must_be_in_the_future_with_an_offset(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    for when in ((utcnow() - timedelta(minutes=1)).isoformat(), "2030-01-01T00:00:00"):
        answer = client.post(
            "/v1/api-keys",
            json={"name": "bad", "expires_at": when},
            headers=tenant_key_a.headers,
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["errors"][0]["field"] == "expires_at"


def test_the_cli_makes_a_key_that_expires(
    db_url: str, tenant_key_a: ApiTenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    args = ["api-keys", "create", "--tenant", tenant_key_a.tenant_id, "--name", "ci"]
    made = CliRunner().invoke(cli, [*args, "--expires-in-days", "7"])
    assert made.exit_code == 0, made.output
    assert "it expires at" in made.output
    listed = CliRunner().invoke(cli, ["api-keys", "list", "--tenant", tenant_key_a.tenant_id])
    assert listed.exit_code == 0, listed.output
    assert "expires" in listed.output
