"""API keys through HTTP: create (shown once), list, revoke; a revoked key stops working."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from support.api_fixtures import ApiTenant, ok


def test_create_list_revoke(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    created = ok(
        client.post("/v1/api-keys", json={"name": "ci", "scopes": ["read"]}, headers=h), 201
    )
    assert created["key"].startswith("dfk_")
    assert created["prefix"] in created["key"]
    assert created["scopes"] == ["read"]
    assert created["revoked_at"] is None

    new_headers = {"Authorization": f"Bearer {created['key']}"}
    assert client.get("/v1/projects", headers=new_headers).status_code == 200

    listed = ok(client.get("/v1/api-keys", headers=h), 200)["items"]
    assert {k["id"] for k in listed} == {tenant_key_a.key_id, created["id"]}
    assert all("key" not in k and "key_hash" not in k for k in listed)

    assert client.delete(f"/v1/api-keys/{created['id']}", headers=h).status_code == 204
    revoked = client.get("/v1/projects", headers=new_headers)
    assert ok(revoked, 401)["detail"] == "API key revoked"
    listed = ok(client.get("/v1/api-keys", headers=h), 200)["items"]
    assert next(k for k in listed if k["id"] == created["id"])["revoked_at"] is not None
    # Revoking twice is harmless.
    assert client.delete(f"/v1/api-keys/{created['id']}", headers=h).status_code == 204


def _key(client: TestClient, tenant: ApiTenant, *scopes: str) -> dict[str, str]:
    body = {"name": "+".join(scopes), "scopes": list(scopes)}
    created = ok(client.post("/v1/api-keys", json=body, headers=tenant.headers), 201)
    return {"Authorization": f"Bearer {created['key']}"}


def test_scopes_are_enforced(client: TestClient, tenant_key_a: ApiTenant) -> None:
    reader = _key(client, tenant_key_a, "read")
    assert client.get("/v1/projects", headers=reader).status_code == 200
    denied = client.post("/v1/projects", json={"name": "x"}, headers=reader)
    problem = ok(denied, 403)
    assert problem["code"] == "forbidden"
    assert "'write'" in problem["detail"]
    assert ok(client.get("/v1/api-keys", headers=reader), 403)["code"] == "forbidden"

    writer = _key(client, tenant_key_a, "read", "write")
    assert client.post("/v1/projects", json={"name": "x"}, headers=writer).status_code == 201
    assert client.delete(f"/v1/api-keys/{tenant_key_a.key_id}", headers=writer).status_code == 403


def test_a_key_cannot_grant_more_than_it_has(client: TestClient, tenant_key_a: ApiTenant) -> None:
    admin = _key(client, tenant_key_a, "admin", "read")
    denied = client.post("/v1/api-keys", json={"name": "x", "scopes": ["*"]}, headers=admin)
    problem = ok(denied, 403)
    assert problem["errors"][0]["field"] == "scopes"
    assert "*" in problem["detail"]
    same = ok(client.post("/v1/api-keys", json={"name": "y"}, headers=admin), 201)
    assert same["scopes"] == ["admin", "read"]


def test_invalid_scope_is_422(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.post(
        "/v1/api-keys",
        json={"name": "bad", "scopes": ["NOT A SCOPE"]},
        headers=tenant_key_a.headers,
    )
    assert ok(response, 422)["errors"][0]["field"] == "scopes"


def test_replayed_key_creation_never_reveals_or_stores_the_secret(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    headers = {**tenant_key_a.headers, "Idempotency-Key": "new-key"}
    body = {"name": "deploy", "scopes": ["read"]}
    first = ok(client.post("/v1/api-keys", json=body, headers=headers), 201)
    again = ok(client.post("/v1/api-keys", json=body, headers=headers), 201)
    assert first["key"].startswith("dfk_")
    assert again == {**first, "key": None}
    keys = ok(client.get("/v1/api-keys", headers=tenant_key_a.headers), 200)["items"]
    assert len(keys) == 2
    with session_factory() as session:
        db.bind_tenant(session, tenant_key_a.tenant_id)
        sql = text("SELECT response_body FROM idempotency_keys WHERE tenant_id = :t")
        stored = [str(row) for row in session.execute(sql, {"t": tenant_key_a.tenant_id}).scalars()]
    assert stored and not any(first["key"] in row for row in stored)


def test_a_keys_use_is_recorded_after_the_answer(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    def last_used() -> object:
        with session_factory() as session:
            db.bind_tenant(session, tenant_key_a.tenant_id)
            sql = text("SELECT last_used_at FROM api_keys WHERE id = :k")
            return session.execute(sql, {"k": tenant_key_a.key_id}).scalar_one()

    assert last_used() is None
    assert client.get("/v1/projects", headers=tenant_key_a.headers).status_code == 200
    assert last_used() is not None
