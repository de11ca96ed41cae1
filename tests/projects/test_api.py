"""Projects through HTTP: create, read, list across pages, update, delete."""

from __future__ import annotations

from fastapi.testclient import TestClient

from support.api_fixtures import ApiTenant


def test_create_get_update_delete(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    created = client.post("/v1/projects", json={"name": "Invoices", "description": "AP"}, headers=h)
    assert created.status_code == 201, created.text
    project = created.json()
    assert project["name"] == "Invoices"
    assert project["description"] == "AP"
    assert project["batch_count"] == 0
    assert project["id"].startswith("prj_")

    got = client.get(f"/v1/projects/{project['id']}", headers=h)
    assert got.status_code == 200
    assert got.json() == project

    patched = client.patch(
        f"/v1/projects/{project['id']}", json={"description": "Accounts payable"}, headers=h
    )
    assert patched.status_code == 200
    assert patched.json()["description"] == "Accounts payable"
    assert patched.json()["name"] == "Invoices"

    deleted = client.delete(f"/v1/projects/{project['id']}", headers=h)
    assert deleted.status_code == 204
    missing = client.get(f"/v1/projects/{project['id']}", headers=h)
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["code"] == "not_found"
