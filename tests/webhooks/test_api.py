"""Webhook endpoints through HTTP: the secret shown once (also on an idempotent replay),
CRUD, validation, private URLs refused by default, the scopes."""

from __future__ import annotations

import base64

from fastapi.testclient import TestClient

from docflow.events.envelopes import EVENT_TYPES
from support.api_fixtures import ApiTenant, collect, ok, post_project

HOOK = "https://93.184.215.14/hooks"


def _create(client: TestClient, tenant: ApiTenant, project_id: str, **body: object) -> dict:
    url = f"/v1/projects/{project_id}/webhooks"
    return ok(client.post(url, json={"url": HOOK, **body}, headers=tenant.headers), 201)


def test_create_shows_the_secret_once_and_crud(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    project = post_project(client, tenant_key_a)
    created = _create(
        client,
        tenant_key_a,
        project["id"],
        event_types=["docflow.batch.completed.v1", "docflow.batch.completed.v1"],
        description="ERP",
    )
    assert created["id"].startswith("whe_")
    assert created["secret"].startswith("whsec_")
    assert len(base64.b64decode(created["secret"][6:])) == 32
    assert created["event_types"] == ["docflow.batch.completed.v1"]
    assert (created["enabled"], created["disabled_reason"]) == (True, None)

    url = f"/v1/webhooks/{created['id']}"
    read = ok(client.get(url, headers=h), 200)
    assert "secret" not in read
    assert read == {k: v for k, v in created.items() if k != "secret"}
    listed = collect(client, f"/v1/projects/{project['id']}/webhooks", h, 1)
    assert listed == [read]

    patched = ok(client.patch(url, json={"enabled": False, "event_types": []}, headers=h), 200)
    assert (patched["enabled"], patched["event_types"]) == (False, [])
    assert patched["disabled_reason"] == "disabled by the tenant"
    assert ok(client.get(f"{url}/deliveries", headers=h), 200) == {"items": [], "next_cursor": None}
    assert client.delete(url, headers=h).status_code == 204
    assert client.get(url, headers=h).status_code == 404


def test_an_idempotent_replay_answers_null_for_the_secret(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    project = post_project(client, tenant_key_a)
    url = f"/v1/projects/{project['id']}/webhooks"
    headers = {**tenant_key_a.headers, "Idempotency-Key": "hook-1"}
    first = ok(client.post(url, json={"url": HOOK}, headers=headers), 201)
    again = client.post(url, json={"url": HOOK}, headers=headers)
    assert again.headers["Idempotency-Replayed"] == "true"
    assert ok(again, 201) == {**first, "secret": None}
    assert len(collect(client, url, tenant_key_a.headers, 10)) == 1
    other = client.post(url, json={"url": HOOK + "/2"}, headers=headers)
    assert other.status_code == 409


def test_private_urls_and_bad_event_types_are_refused(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    project = post_project(client, tenant_key_a)
    url = f"/v1/projects/{project['id']}/webhooks"
    for hook in (
        "http://127.0.0.1:9000/x",
        "http://169.254.169.254/",
        "file:///etc/passwd",
        "http://0127.0.0.1/",  # read as 87.0.0.1 by the resolver, refused by the client
        "http://0x7f.1/",
        "http://[2002:a9fe:a9fe::1]/",  # 6to4 of 169.254.169.254
    ):
        problem = ok(client.post(url, json={"url": hook}, headers=tenant_key_a.headers), 422)
        assert problem["errors"][0]["field"] == "url"
    for types in (["Not A Type!"], ["docflow.batch.completed.v1", "docflow.batch.vanished.v1"]):
        body = {"url": HOOK, "event_types": types}
        problem = ok(client.post(url, json=body, headers=tenant_key_a.headers), 422)
        assert problem["errors"][0]["field"] == "event_types"
        assert problem["valid_event_types"] == list(EVENT_TYPES)
        assert "docflow.document.completed.v1" in problem["detail"]
    endpoint = _create(client, tenant_key_a, project["id"])
    for patch in ({"url": "http://10.0.0.1/x"}, {"event_types": ["docflow.batch.done.v1"]}):
        response = client.patch(
            f"/v1/webhooks/{endpoint['id']}", json=patch, headers=tenant_key_a.headers
        )
        assert ok(response, 422)["errors"][0]["field"] == next(iter(patch))
    empty = client.patch(f"/v1/webhooks/{endpoint['id']}", json={}, headers=tenant_key_a.headers)
    assert empty.status_code == 422


def test_a_missing_project_is_404(client: TestClient, tenant_key_a: ApiTenant) -> None:
    url = "/v1/projects/prj_00000000000000000000000000/webhooks"
    assert client.post(url, json={"url": HOOK}, headers=tenant_key_a.headers).status_code == 404
