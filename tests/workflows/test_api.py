"""Extraction workflows through HTTP: create, versions, list order, validation naming fields."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from support.api_fixtures import (
    ApiTenant,
    collect,
    ok,
    post_project,
    post_workflow,
    workflow_body,
)
from support.stored_workflows import LOOKBEHIND, lookbehind_definition, store_version


def test_create_get_and_new_version(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    project = post_project(client, tenant_key_a)
    created = post_workflow(client, tenant_key_a, project["id"])
    assert created["id"].startswith("wfl_")
    assert (created["version"], created["project_id"]) == (1, project["id"])
    assert created["definition"]["fields"][0]["name"] == "invoice_number"
    assert created["definition"]["review_threshold"] == 0.8

    url = f"/v1/workflows/{created['id']}"
    assert ok(client.get(url, headers=h), 200) == created

    edited = workflow_body(review_threshold=0.9)
    v2 = ok(client.put(url, json=edited, headers=h), 200)
    assert (v2["id"], v2["version"]) == (created["id"], 2)
    assert v2["definition"]["review_threshold"] == 0.9
    # Each version names the key that published it.
    assert created["published_by"] == v2["published_by"] == tenant_key_a.key_id

    assert ok(client.get(url, headers=h), 200)["version"] == 2
    v1 = ok(client.get(url, params={"version": 1}, headers=h), 200)
    assert v1["definition"]["review_threshold"] == 0.8
    missing = ok(client.get(url, params={"version": 3}, headers=h), 404)
    assert missing["errors"] == [{"field": "version", "message": "workflow version not found"}]


def test_profiles_are_kept_only_when_selected(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    project = post_project(client, tenant_key_a)
    plain = post_workflow(client, tenant_key_a, project["id"])
    assert "profiles" not in plain["definition"]  # absent: the engine applies all of them
    url = f"/v1/workflows/{plain['id']}"
    chosen = ok(client.put(url, json=workflow_body(profiles=["invoice"]), headers=h), 200)
    assert chosen["definition"]["profiles"] == ["invoice"]
    none = ok(client.put(url, json=workflow_body(profiles=[]), headers=h), 200)
    assert (none["version"], none["definition"]["profiles"]) == (3, [])


def test_list_most_recently_updated_first(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    project = post_project(client, tenant_key_a)
    ids = [post_workflow(client, tenant_key_a, project["id"], f"wf{i}")["id"] for i in range(5)]
    url = f"/v1/projects/{project['id']}/workflows"
    assert [w["id"] for w in collect(client, url, h, limit=2)] == list(reversed(ids))

    ok(
        client.put(
            f"/v1/workflows/{ids[1]}", json=workflow_body("wf1", description="x"), headers=h
        ),
        200,
    )
    listed = collect(client, url, h, limit=2)
    assert [w["id"] for w in listed] == [ids[1], ids[4], ids[3], ids[2], ids[0]]
    assert listed[0]["version"] == 2


def _field(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "string", **extra}


def _pattern(pattern: str) -> dict[str, Any]:
    return {"kind": "pattern", "pattern": pattern}


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"fields": [_field("total"), _field("total")]}, "fields", "unique: total"),
        ({"fields": [_field("total", type="currency")]}, "fields.0.type", "Input should be"),
        (
            {"confidence_threshold": 0.9, "review_threshold": 0.5},
            "review_threshold",
            "confidence_threshold",
        ),
        ({"review_threshold": 1.5}, "review_threshold", "less than or equal to 1"),
        ({"confidence_threshold": -0.1}, "confidence_threshold", "greater than or equal to 0"),
        ({"fields": [_field("Bad Name")]}, "fields.0.name", "pattern"),
        ({"fields": []}, "fields", "at least 1"),
        ({"fields": [_field("kind", type="enum")]}, "fields.0", "enum_values"),
        (
            {"fields": [_field("a"), _field("ref", locators=[_pattern("x"), _pattern(r"(a)\1")])]},
            "fields.1.locators.1.pattern",
            "backreferences are not supported",
        ),
        (
            {"fields": [_field("code", type="regex", pattern=r"(?<=No)\d+")]},
            "fields.0.pattern",
            "lookbehind is not supported",
        ),
        (
            {"fields": [_field("code", type="regex", pattern=r"INV(?!-)\d+")]},
            "fields.0.pattern",
            "lookahead is not supported",
        ),
        (
            {"fields": [_field("code", locators=[_pattern("a" * 1001)])]},
            "fields.0.locators.0.pattern",
            "at most 1000 characters",
        ),
        ({"profiles": ["receipt", "en-GB"]}, "profiles.1", "'invoice', 'receipt' or 'en-MY'"),
        ({"profiles": ["receipt", "receipt"]}, "profiles", "named once"),
        ({"reading": "best"}, "reading", "'fast', 'accurate' or 'auto'"),
    ],
)
def test_invalid_definitions_name_the_field(
    client: TestClient,
    tenant_key_a: ApiTenant,
    overrides: dict[str, Any],
    field: str,
    fragment: str,
) -> None:
    project = post_project(client, tenant_key_a)
    response = client.post(
        f"/v1/projects/{project['id']}/workflows",
        json=workflow_body(**overrides),
        headers=tenant_key_a.headers,
    )
    problem = ok(response, 422)
    assert response.headers["content-type"] == "application/problem+json"
    assert problem["code"] == "invalid_input"
    assert problem["errors"][0]["field"] == field, problem
    assert fragment in problem["errors"][0]["message"]
    listed = ok(
        client.get(f"/v1/projects/{project['id']}/workflows", headers=tenant_key_a.headers), 200
    )
    assert listed["items"] == []


def test_update_validates_like_create(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project = post_project(client, tenant_key_a)
    created = post_workflow(client, tenant_key_a, project["id"])
    bad = workflow_body(confidence_threshold=0.95)
    problem = ok(
        client.put(f"/v1/workflows/{created['id']}", json=bad, headers=tenant_key_a.headers), 422
    )
    assert problem["errors"][0]["field"] == "review_threshold"
    current = ok(client.get(f"/v1/workflows/{created['id']}", headers=tenant_key_a.headers), 200)
    assert current["version"] == 1


def test_duplicate_workflow_name_in_project(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project = post_project(client, tenant_key_a)
    post_workflow(client, tenant_key_a, project["id"], "same")
    again = client.post(
        f"/v1/projects/{project['id']}/workflows",
        json=workflow_body("same"),
        headers=tenant_key_a.headers,
    )
    assert ok(again, 409)["errors"][0]["field"] == "name"


def test_workflow_in_missing_project(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.post(
        "/v1/projects/prj_00000000000000000000000000/workflows",
        json=workflow_body(),
        headers=tenant_key_a.headers,
    )
    assert ok(response, 404)["detail"] == "project not found"


def test_a_version_stored_before_re2_is_shown_and_cannot_be_submitted_again(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    """A lookbehind pattern an earlier release stored is shown as stored (not a 500); the same
    definition sent as a new version is refused like any new one."""
    h = tenant_key_a.headers
    project = post_project(client, tenant_key_a)
    created = post_workflow(client, tenant_key_a, project["id"])
    old = lookbehind_definition()
    assert store_version(session_factory, tenant_key_a.tenant_id, created["id"], old) == 2

    url = f"/v1/workflows/{created['id']}"
    shown = ok(client.get(url, headers=h), 200)
    assert shown["version"] == 2
    assert shown["definition"]["fields"][0]["locators"][1]["pattern"] == LOOKBEHIND
    listed = ok(client.get(f"/v1/projects/{project['id']}/workflows", headers=h), 200)
    assert [w["version"] for w in listed["items"]] == [2]

    problem = ok(client.put(url, json=old, headers=h), 422)
    assert problem["errors"][0]["field"] == "fields.0.locators.1.pattern"
    assert "lookbehind is not supported" in problem["errors"][0]["message"]
    fixed = ok(client.put(url, json=workflow_body(), headers=h), 200)
    assert fixed["version"] == 3
