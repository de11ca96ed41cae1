"""Idempotency-Key on creating POSTs: replay, conflict, tenant scope."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from support.api_fixtures import (
    ApiTenant,
    documents_body,
    ok,
    post_project,
    post_workflow,
    workflow_body,
)


def _batch_body(client: TestClient, tenant: ApiTenant) -> dict[str, Any]:
    project = post_project(client, tenant)
    workflow = post_workflow(client, tenant, project["id"])
    return {
        "project_id": project["id"],
        "workflow_id": workflow["id"],
        "documents": documents_body(3),
    }


def _count(factory: sessionmaker[Session], table: str, tenant_id: str) -> int:
    """Rows of `table` for the tenant, read straight from the database (RLS applies on
    PostgreSQL, hence the binding)."""
    with factory() as session:
        db.bind_tenant(session, tenant_id)
        sql = text(f"SELECT count(*) FROM {table} WHERE tenant_id = :t")
        return int(session.execute(sql, {"t": tenant_id}).scalar_one())


def test_same_key_same_body_replays_without_a_second_batch(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    body = _batch_body(client, tenant_key_a)
    headers = {**tenant_key_a.headers, "Idempotency-Key": "batch-1"}
    first = client.post("/v1/batches", json=body, headers=headers)
    second = client.post("/v1/batches", json=body, headers=headers)
    assert (first.status_code, second.status_code) == (202, 202)
    assert second.json() == first.json()
    assert second.headers.get("Idempotency-Replayed") == "true"
    assert "Idempotency-Replayed" not in first.headers
    assert _count(session_factory, "batches", tenant_key_a.tenant_id) == 1
    assert _count(session_factory, "documents", tenant_key_a.tenant_id) == 3
    listed = ok(client.get("/v1/batches", headers=tenant_key_a.headers), 200)
    assert [b["id"] for b in listed["items"]] == [first.json()["id"]]

    # Key order and defaults do not make another request; a different body does.
    reordered = dict(reversed(list(body.items())))
    assert client.post("/v1/batches", json=reordered, headers=headers).json() == first.json()
    changed = {**body, "documents": documents_body(2)}
    conflict = client.post("/v1/batches", json=changed, headers=headers)
    problem = ok(conflict, 409)
    assert conflict.headers["content-type"] == "application/problem+json"
    assert problem["code"] == "conflict"
    assert problem["errors"][0]["field"] == "Idempotency-Key"
    assert _count(session_factory, "batches", tenant_key_a.tenant_id) == 1


def test_replay_keeps_the_first_status_for_201(client: TestClient, tenant_key_a: ApiTenant) -> None:
    headers = {**tenant_key_a.headers, "Idempotency-Key": "project-1"}
    first = client.post("/v1/projects", json={"name": "Once"}, headers=headers)
    again = client.post("/v1/projects", json={"name": "Once"}, headers=headers)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json()
    listed = ok(client.get("/v1/projects", headers=tenant_key_a.headers), 200)
    assert [p["id"] for p in listed["items"]] == [first.json()["id"]]

    # The same key on another endpoint is another request.
    other = client.post(
        f"/v1/projects/{first.json()['id']}/workflows", json=workflow_body(), headers=headers
    )
    assert ok(other, 409)["code"] == "conflict"


def test_without_a_key_each_post_creates(client: TestClient, tenant_key_a: ApiTenant) -> None:
    body = _batch_body(client, tenant_key_a)
    ids = {
        ok(client.post("/v1/batches", json=body, headers=tenant_key_a.headers), 202)["id"]
        for _ in range(2)
    }
    assert len(ids) == 2


def test_keys_are_per_tenant(
    client: TestClient, tenant_key_a: ApiTenant, tenant_key_b: ApiTenant
) -> None:
    a = client.post(
        "/v1/projects", json={"name": "P"}, headers={**tenant_key_a.headers, "Idempotency-Key": "k"}
    )
    b = client.post(
        "/v1/projects", json={"name": "P"}, headers={**tenant_key_b.headers, "Idempotency-Key": "k"}
    )
    assert (a.status_code, b.status_code) == (201, 201)
    assert a.json()["id"] != b.json()["id"]
    assert "Idempotency-Replayed" not in b.headers


def test_failed_request_stores_nothing(client: TestClient, tenant_key_a: ApiTenant) -> None:
    headers = {**tenant_key_a.headers, "Idempotency-Key": "retry-me"}
    body = {
        "project_id": "prj_00000000000000000000000000",
        "workflow_id": "wfl_x",
        "documents": documents_body(1),
    }
    assert client.post("/v1/batches", json=body, headers=headers).status_code == 404
    good = _batch_body(client, tenant_key_a)
    assert client.post("/v1/batches", json=good, headers=headers).status_code == 202


def test_key_too_long_is_422(client: TestClient, tenant_key_a: ApiTenant) -> None:
    headers = {**tenant_key_a.headers, "Idempotency-Key": "k" * 256}
    problem = ok(client.post("/v1/projects", json={"name": "Long"}, headers=headers), 422)
    assert problem["errors"][0]["field"] == "Idempotency-Key"


def test_concurrent_first_requests_create_one_batch(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    body = _batch_body(client, tenant_key_a)
    headers = {**tenant_key_a.headers, "Idempotency-Key": "race"}
    barrier = threading.Barrier(5)

    def post(_: int) -> httpx.Response:
        barrier.wait()
        return client.post("/v1/batches", json=body, headers=headers)

    with ThreadPoolExecutor(5) as pool:
        responses = list(pool.map(post, range(5)))
    accepted = [r.json() for r in responses if r.status_code == 202]
    assert accepted and all(a == accepted[0] for a in accepted)
    # The losers were told to retry (409 on a key race; 503 when SQLite's lock was contended).
    for response in responses:
        assert response.status_code in (202, 409, 503), response.text
        if response.status_code != 202:
            assert response.headers["content-type"] == "application/problem+json"
    assert _count(session_factory, "batches", tenant_key_a.tenant_id) == 1
    retry = client.post("/v1/batches", json=body, headers=headers)
    assert (retry.status_code, retry.json()) == (202, accepted[0])


def test_replay_of_a_deleted_project_is_a_409(client: TestClient, tenant_key_a: ApiTenant) -> None:
    headers = {**tenant_key_a.headers, "Idempotency-Key": "project-then-deleted"}
    body = {"name": "deleted since"}
    project = ok(client.post("/v1/projects", json=body, headers=headers), 201)
    workflow_headers = {**tenant_key_a.headers, "Idempotency-Key": "workflow-then-deleted"}
    workflow_url = f"/v1/projects/{project['id']}/workflows"
    ok(client.post(workflow_url, json=workflow_body(), headers=workflow_headers), 201)
    deleted = client.delete(f"/v1/projects/{project['id']}", headers=tenant_key_a.headers)
    assert deleted.status_code == 204

    for url, json, key_headers in (
        ("/v1/projects", body, headers),
        (workflow_url, workflow_body(), workflow_headers),  # deleted with its project
    ):
        replay = client.post(url, json=json, headers=key_headers)
        problem = ok(replay, 409)
        assert problem["code"] == "idempotent_object_deleted"
        assert problem["errors"][0]["field"] == "Idempotency-Key"
        assert "idempotency-replayed" not in replay.headers
    assert (
        client.get(f"/v1/projects/{project['id']}", headers=tenant_key_a.headers).status_code == 404
    )
    names = [
        p["name"]
        for p in ok(client.get("/v1/projects", headers=tenant_key_a.headers), 200)["items"]
    ]
    assert "deleted since" not in names
