"""Bad input is a 4xx naming the field, never a 5xx, on SQLite and PostgreSQL alike: NUL
characters and unpaired surrogates anywhere, integers past the columns' bits, times out of
range or without an offset, booleans where numbers go."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from support.api_fixtures import (
    ApiTenant,
    documents_body,
    make_objects,
    ok,
    post_project,
    workflow_body,
)

JSON = {"Content-Type": "application/json"}


def invalid(response: Any, field: str) -> dict[str, Any]:
    """The 422 problem of `response`, checked to name `field`."""
    problem = ok(response, 422)
    assert problem["code"] == "invalid_input"
    assert response.headers["content-type"] == "application/problem+json"
    assert field in [error["field"] for error in problem["errors"]], problem
    return problem


def raw_post(client: TestClient, tenant: ApiTenant, url: str, text: str) -> Any:
    """POST a body written by hand: json.dumps would not let a lone surrogate through."""
    return client.post(url, content=text.encode(), headers={**tenant.headers, **JSON})


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800"])
def test_unstorable_characters_in_body_strings_are_422(
    client: TestClient, tenant_key_a: ApiTenant, escape: str
) -> None:
    response = raw_post(client, tenant_key_a, "/v1/projects", f'{{"name": "a{escape}b"}}')
    invalid(response, "name")
    assert "NUL" in response.json()["detail"]


def test_nul_deep_in_a_workflow_definition_names_its_path(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    project = post_project(client, tenant_key_a, "nul-workflow")
    body = workflow_body()
    body["fields"][1]["locators"][0]["labels"] = ["Total", "Sum\x00"]
    response = client.post(
        f"/v1/projects/{project['id']}/workflows", json=body, headers=tenant_key_a.headers
    )
    invalid(response, "fields.1.locators.0.labels.1")


def test_nul_in_an_object_key_names_the_key(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = raw_post(client, tenant_key_a, "/v1/projects", '{"name": "k", "na\\u0000me": 1}')
    invalid(response, "na\\u0000me")


def test_a_number_past_a_float_is_422(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project = post_project(client, tenant_key_a, "infinite-template")
    body = json.dumps(workflow_body(template={"page_width": 1}))
    body = body.replace('"page_width": 1', '"page_width": 1e400')  # parsed as infinity
    url = f"/v1/projects/{project['id']}/workflows"
    invalid(raw_post(client, tenant_key_a, url, body), "template.page_width")


@pytest.mark.parametrize("depth", [50, 5000])
def test_deeply_nested_bodies_are_422(
    client: TestClient, tenant_key_a: ApiTenant, depth: int
) -> None:
    # 50 levels reach validation; 5000 are past what the JSON parser reads.
    body = '{"name": ' + "[" * depth + "]" * depth + "}"
    problem = ok(raw_post(client, tenant_key_a, "/v1/projects", body), 422)
    assert problem["errors"][0]["field"] in ("name", "(body)")


def test_an_escaped_backslash_is_not_a_nul(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = raw_post(client, tenant_key_a, "/v1/projects", '{"name": "path\\\\u0000"}')
    assert ok(response, 201)["name"] == "path\\u0000"


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/v1/projects/prj_%00", "project_id"),
        ("/v1/batches/bat%00x", "batch_id"),
        ("/v1/documents/doc%00/history", "document_id"),
        ("/v1/workflows/wfl%00", "workflow_id"),
        ("/v1/webhooks/whe%00/deliveries", "endpoint_id"),
    ],
)
def test_nul_in_a_path_id_is_422(
    client: TestClient, tenant_key_a: ApiTenant, url: str, field: str
) -> None:
    invalid(client.get(url, headers=tenant_key_a.headers), field)


def test_nul_in_a_query_parameter_is_422(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.get("/v1/dead-letters?consumer=web%00hooks", headers=tenant_key_a.headers)
    invalid(response, "consumer")


def cursor_of(values: list[Any]) -> str:
    raw = json.dumps(values).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "abc%00",  # NUL in the cursor as sent
        cursor_of([{"dt": "2026-01-01T00:00:00+00:00"}, "bat_\u0000"]),  # NUL inside it
        cursor_of([{"dt": "9999-12-31T23:59:59-14:00"}, "bat_x"]),  # past year 9999 in UTC
        cursor_of([{"dt": "2026-01-01T00:00:00"}, "bat_x"]),  # no offset
    ],
)
def test_bad_cursors_are_422(client: TestClient, tenant_key_a: ApiTenant, cursor: str) -> None:
    # Batches list by (created_at, id): a cursor of a time and a string.
    response = client.get(f"/v1/batches?cursor={cursor}", headers=tenant_key_a.headers)
    invalid(response, "cursor")


def test_integers_past_the_columns_are_422(client: TestClient, tenant_key_a: ApiTenant) -> None:
    objects = make_objects(client, tenant_key_a)
    workflow_id = objects.workflow["id"]
    for version in ("9223372036854775808", str(2**31)):
        response = client.get(
            f"/v1/workflows/{workflow_id}?version={version}", headers=tenant_key_a.headers
        )
        invalid(response, "version")
    body = {
        "project_id": objects.project["id"],
        "workflow_id": workflow_id,
        "workflow_version": 2**70,
        "documents": documents_body(1),
    }
    response = client.post("/v1/batches", json=body, headers=tenant_key_a.headers)
    invalid(response, "workflow_version")
    body["workflow_version"] = True
    invalid(client.post("/v1/batches", json=body, headers=tenant_key_a.headers), "workflow_version")
    body["workflow_version"] = 1
    body["documents"][0]["size"] = 2**70
    invalid(client.post("/v1/batches", json=body, headers=tenant_key_a.headers), "documents.0.size")


@pytest.mark.parametrize(
    "when",
    ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "1969-12-31T23:59:59Z"],
)
def test_times_out_of_range_are_422(client: TestClient, tenant_key_a: ApiTenant, when: str) -> None:
    objects = make_objects(client, tenant_key_a)
    body = {
        "project_id": objects.project["id"],
        "workflow_id": objects.workflow["id"],
        "documents": documents_body(1),
        "scheduled_for": when,
    }
    invalid(client.post("/v1/batches", json=body, headers=tenant_key_a.headers), "scheduled_for")
    response = client.get("/v1/dead-letters", params={"until": when}, headers=tenant_key_a.headers)
    invalid(response, "until")


@pytest.mark.parametrize("value", ["2026-12-01T10:00:00", "0.5", "1700000000", "2026-12-01"])
def test_query_times_need_an_rfc3339_offset(
    client: TestClient, tenant_key_a: ApiTenant, value: str
) -> None:
    for name in ("since", "until"):
        response = client.get(
            "/v1/dead-letters", params={name: value}, headers=tenant_key_a.headers
        )
        invalid(response, name)


def test_a_time_with_an_offset_is_accepted(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.get(
        "/v1/dead-letters",
        params={"since": "2026-01-01T00:00:00+14:00", "until": "9998-12-30T23:59:59-14:00"},
        headers=tenant_key_a.headers,
    )
    assert ok(response, 200)["items"] == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("tolerated_failure_percent", False),
        ("confidence_threshold", True),
        ("review_threshold", "0.9"),
    ],
)
def test_workflow_numbers_are_json_numbers(
    client: TestClient, tenant_key_a: ApiTenant, name: str, value: Any
) -> None:
    project = post_project(client, tenant_key_a, f"numbers-{name}")
    response = client.post(
        f"/v1/projects/{project['id']}/workflows",
        json=workflow_body(**{name: value}),
        headers=tenant_key_a.headers,
    )
    invalid(response, name)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("fields.0.required", 1),
        ("fields.0.required", "yes"),
        ("fields.0.locators.1.page", True),
        ("fields.0.locators.1.page", 1.0),
        ("fields.0.locators.1.box.x0", "0.1"),
        ("fields.0.locators.1.box.y1", False),
    ],
)
def test_numbers_and_flags_inside_a_definition_are_json_numbers_and_booleans(
    client: TestClient, tenant_key_a: ApiTenant, path: str, value: Any
) -> None:
    body = workflow_body()
    region = {"kind": "region", "page": 1, "box": {"x0": 0.1, "y0": 0.1, "x1": 0.5, "y1": 0.2}}
    body["fields"][0]["locators"].append(region)
    project = post_project(client, tenant_key_a, "nested-numbers")
    url = f"/v1/projects/{project['id']}/workflows"
    ok(client.post(url, json=body, headers=tenant_key_a.headers), 201)
    *parents, leaf = path.split(".")
    node: Any = body
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[leaf] = value
    body["name"] = "loose"
    invalid(client.post(url, json=body, headers=tenant_key_a.headers), path)


def test_webhook_enabled_is_a_json_boolean(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.patch("/v1/webhooks/whe_x", json={"enabled": 1}, headers=tenant_key_a.headers)
    invalid(response, "enabled")
