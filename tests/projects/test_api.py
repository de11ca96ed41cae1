"""Projects through HTTP: create, read, list across pages, update, delete, and their errors."""

from __future__ import annotations

from fastapi.testclient import TestClient

from support.api_fixtures import ApiTenant, collect, make_objects, ok, post_project


def test_create_get_update_delete(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    project = ok(
        client.post("/v1/projects", json={"name": "Invoices", "description": "AP"}, headers=h), 201
    )
    assert project["name"] == "Invoices"
    assert project["description"] == "AP"
    assert (project["batch_count"], project["document_count"]) == (0, 0)
    assert project["id"].startswith("prj_")

    assert ok(client.get(f"/v1/projects/{project['id']}", headers=h), 200) == project

    url = f"/v1/projects/{project['id']}"
    patched = ok(client.patch(url, json={"description": "Accounts payable"}, headers=h), 200)
    assert patched["description"] == "Accounts payable"
    assert patched["name"] == "Invoices"
    renamed = ok(client.patch(url, json={"name": "Payables"}, headers=h), 200)
    assert (renamed["name"], renamed["description"]) == ("Payables", "Accounts payable")

    deleted = client.delete(url, headers=h)
    assert deleted.status_code == 204
    assert deleted.content == b""
    missing = client.get(url, headers=h)
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["code"] == "not_found"


def test_list_pages_newest_first(client: TestClient, tenant_key_a: ApiTenant) -> None:
    made = [post_project(client, tenant_key_a, f"Project {i}")["id"] for i in range(7)]
    listed = collect(client, "/v1/projects", tenant_key_a.headers, limit=3)
    assert [p["id"] for p in listed] == list(reversed(made))


def test_duplicate_name_is_a_conflict(client: TestClient, tenant_key_a: ApiTenant) -> None:
    post_project(client, tenant_key_a, "Same")
    again = client.post("/v1/projects", json={"name": "Same"}, headers=tenant_key_a.headers)
    problem = ok(again, 409)
    assert problem["code"] == "conflict"
    assert problem["errors"] == [{"field": "name", "message": problem["detail"]}]


def test_validation_errors_name_the_field(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    problem = ok(client.post("/v1/projects", json={"name": ""}, headers=h), 422)
    assert problem["code"] == "invalid_input"
    assert [e["field"] for e in problem["errors"]] == ["name"]
    assert problem["status"] == 422
    assert problem["type"].endswith("invalid_input")

    unknown = ok(client.post("/v1/projects", json={"name": "x", "owner": "me"}, headers=h), 422)
    assert [e["field"] for e in unknown["errors"]] == ["owner"]

    project = post_project(client, tenant_key_a)
    empty = ok(client.patch(f"/v1/projects/{project['id']}", json={}, headers=h), 422)
    assert "at least one" in empty["detail"]

    bad_limit = ok(client.get("/v1/projects", params={"limit": 0}, headers=h), 422)
    assert [e["field"] for e in bad_limit["errors"]] == ["limit"]
    bad_cursor = ok(client.get("/v1/projects", params={"cursor": "!!"}, headers=h), 422)
    assert [e["field"] for e in bad_cursor["errors"]] == ["cursor"]


def test_project_with_batches_cannot_be_deleted(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    objects = make_objects(client, tenant_key_a)
    url = f"/v1/projects/{objects.project['id']}"
    assert ok(client.delete(url, headers=tenant_key_a.headers), 409)["code"] == "conflict"
    counted = ok(client.get(url, headers=tenant_key_a.headers), 200)
    assert (counted["batch_count"], counted["document_count"]) == (1, 2)
