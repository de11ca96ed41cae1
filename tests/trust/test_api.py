"""Earned trust through HTTP: the per-field view of a workflow version, the workflow keys, and
their validation naming the field."""

from __future__ import annotations

from fastapi.testclient import TestClient

from support.api_fixtures import ApiTenant, ok, post_project, workflow_body


def test_a_new_workflows_fields_are_untrusted_and_the_keys_round_trip(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    h = tenant_key_a.headers
    project = post_project(client, tenant_key_a)
    body = workflow_body(target_precision=0.95, qa_sample_rate=0.05, cold_start="review")
    created = ok(client.post(f"/v1/projects/{project['id']}/workflows", json=body, headers=h), 201)
    assert created["definition"]["target_precision"] == 0.95
    assert created["definition"]["qa_sample_rate"] == 0.05
    trust = ok(client.get(f"/v1/workflows/{created['id']}/trust", headers=h), 200)
    assert trust["version"] == 1 and trust["learning"] is True
    assert (trust["target_precision"], trust["qa_sample_rate"]) == (0.95, 0.05)
    assert trust["cold_start"] == "review"
    assert [f["name"] for f in trust["fields"]] == ["invoice_number", "total"]
    assert trust["fields"][0] == {
        "name": "invoice_number",
        "examples": 0,
        "correct": 0,
        "cut": None,
        "precision": None,
        "lower_bound": None,
        "automation_rate": 0.0,
        "decided_by": "review",
        "drifted_at": None,
    }
    url = f"/v1/workflows/{created['id']}/trust"
    missing = ok(client.get(url, params={"version": 2}, headers=h), 404)
    assert missing["errors"] == [{"field": "version", "message": "workflow version not found"}]


def test_out_of_range_keys_are_refused_naming_the_field(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    h = tenant_key_a.headers
    project = post_project(client, tenant_key_a)
    url = f"/v1/projects/{project['id']}/workflows"
    for key, value in (("qa_sample_rate", 1.5), ("target_precision", 0.2), ("cold_start", "x")):
        refused = ok(client.post(url, json=workflow_body(**{key: value}), headers=h), 422)
        assert [e["field"] for e in refused["errors"]] == [key]
