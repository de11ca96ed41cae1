"""Batches through HTTP: the 202 answer, reading, listing by status and date, limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from support.api_fixtures import (
    PUBLIC_BASE_URL,
    ApiTenant,
    collect,
    documents_body,
    ok,
    post_batch,
    post_project,
    post_workflow,
)


def _setup(client: TestClient, tenant: ApiTenant) -> tuple[str, str]:
    project = post_project(client, tenant)
    return project["id"], post_workflow(client, tenant, project["id"])["id"]


def test_create_answers_202_with_documents_and_status_url(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    project_id, workflow_id = _setup(client, tenant_key_a)
    when = datetime.now(UTC) + timedelta(hours=2)
    body = {
        "project_id": project_id,
        "workflow_id": workflow_id,
        "documents": documents_body(3),
        "scheduled_for": when.isoformat(),
    }
    batch = ok(client.post("/v1/batches", json=body, headers=tenant_key_a.headers), 202)
    assert batch["id"].startswith("bat_")
    assert batch["status"] == "CREATED"
    assert (batch["project_id"], batch["workflow_id"], batch["workflow_version"]) == (
        project_id,
        workflow_id,
        1,
    )
    assert batch["document_count"] == 3
    assert batch["status_url"] == f"{PUBLIC_BASE_URL}/v1/batches/{batch['id']}"
    assert datetime.fromisoformat(batch["scheduled_for"]) == when
    assert [d["name"] for d in batch["documents"]] == ["doc-000.pdf", "doc-001.pdf", "doc-002.pdf"]
    assert all(d["id"].startswith("doc_") for d in batch["documents"])
    assert all(
        d["upload_url"].startswith(f"{PUBLIC_BASE_URL}/v1/uploads/v1.") for d in batch["documents"]
    )
    assert len({d["id"] for d in batch["documents"]}) == 3
    for declared in batch["documents"]:
        target = declared["upload"]
        assert target["url"] == declared["upload_url"]
        assert (target["method"], target["headers"]) == ("PUT", {"Content-Type": "application/pdf"})
        # The URL lasts the TTL (an hour by default), within the batch's upload deadline.
        expires_at = datetime.fromisoformat(target["expires_at"])
        created_at = datetime.fromisoformat(batch["created_at"])
        assert timedelta(minutes=59) < expires_at - created_at <= timedelta(hours=1, seconds=2)

    got = ok(client.get(f"/v1/batches/{batch['id']}", headers=tenant_key_a.headers), 200)
    expected = {k: v for k, v in batch.items() if k not in ("documents", "status_url")}
    assert got == expected
    project = ok(client.get(f"/v1/projects/{project_id}", headers=tenant_key_a.headers), 200)
    assert (project["batch_count"], project["document_count"]) == (1, 3)


def test_batch_pins_the_requested_version(client: TestClient, tenant_key_a: ApiTenant) -> None:
    from support.api_fixtures import workflow_body

    project_id, workflow_id = _setup(client, tenant_key_a)
    h = tenant_key_a.headers
    ok(
        client.put(f"/v1/workflows/{workflow_id}", json=workflow_body(description="v2"), headers=h),
        200,
    )
    latest = post_batch(client, tenant_key_a, project_id, workflow_id)
    assert latest["workflow_version"] == 2
    body = {
        "project_id": project_id,
        "workflow_id": workflow_id,
        "workflow_version": 1,
        "documents": documents_body(1),
    }
    assert ok(client.post("/v1/batches", json=body, headers=h), 202)["workflow_version"] == 1
    body["workflow_version"] = 7
    assert ok(client.post("/v1/batches", json=body, headers=h), 404)["errors"][0]["field"] == (
        "version"
    )


def test_list_newest_first_and_by_status(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project_id, workflow_id = _setup(client, tenant_key_a)
    made = [post_batch(client, tenant_key_a, project_id, workflow_id)["id"] for _ in range(5)]
    h = tenant_key_a.headers
    assert [b["id"] for b in collect(client, "/v1/batches", h, limit=2)] == list(reversed(made))
    created = collect(client, "/v1/batches", h, limit=4, query={"status": "CREATED"})
    assert [b["id"] for b in created] == list(reversed(made))
    assert collect(client, "/v1/batches", h, 4, {"status": "SUCCEEDED"}) == []
    bad = ok(client.get("/v1/batches", params={"status": "DONE"}, headers=h), 422)
    assert [e["field"] for e in bad["errors"]] == ["status"]


def test_limits_answer_413_naming_the_field(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project_id, workflow_id = _setup(client, tenant_key_a)
    h = tenant_key_a.headers
    base = {"project_id": project_id, "workflow_id": workflow_id}
    too_many = ok(
        client.post("/v1/batches", json={**base, "documents": documents_body(21)}, headers=h), 413
    )
    assert too_many["code"] == "limit_exceeded"
    assert "at most 20 documents" in too_many["detail"]
    assert too_many["errors"][0]["field"] == "documents"
    assert too_many["max_documents"] == 20
    big = documents_body(2)
    big[1]["size"] = 10 * 1024 * 1024 + 1
    too_large = ok(client.post("/v1/batches", json={**base, "documents": big}, headers=h), 413)
    assert "doc-001.pdf" in too_large["detail"]
    assert too_large["max_bytes"] == 10 * 1024 * 1024
    assert ok(client.get("/v1/batches", headers=h), 200)["items"] == []


def test_validation_and_limits_name_a_document_field_alike(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    project_id, workflow_id = _setup(client, tenant_key_a)
    base = {"project_id": project_id, "workflow_id": workflow_id}
    # Two documents with one name: only the index tells which one is at fault.
    invalid, too_large = documents_body(3), documents_body(3)
    for declared in (invalid, too_large):
        declared[1]["name"] = declared[2]["name"] = "same.pdf"
    invalid[2]["size"] = -1
    too_large[2]["size"] = 10 * 1024 * 1024 + 1
    h = tenant_key_a.headers
    by_validation = ok(
        client.post("/v1/batches", json={**base, "documents": invalid}, headers=h), 422
    )
    by_limit = ok(client.post("/v1/batches", json={**base, "documents": too_large}, headers=h), 413)
    assert (
        by_validation["errors"][0]["field"]
        == by_limit["errors"][0]["field"]
        == ("documents.2.size")
    )


def test_invalid_batches_name_the_field(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project_id, workflow_id = _setup(client, tenant_key_a)
    h = tenant_key_a.headers
    base = {"project_id": project_id, "workflow_id": workflow_id}
    cases = [
        ({**base, "documents": []}, "documents"),
        (
            {**base, "documents": [{"name": "a.pdf", "content_type": "pdf", "size": 1}]},
            "documents.0.content_type",
        ),
        (
            {
                **base,
                "documents": [{"name": "a.pdf", "content_type": "application/pdf", "size": -1}],
            },
            "documents.0.size",
        ),
        (
            {**base, "documents": documents_body(1), "scheduled_for": "2030-01-01T00:00:00"},
            "scheduled_for",
        ),
        ({"project_id": project_id, "documents": documents_body(1)}, "workflow_id"),
    ]
    for body, field in cases:
        problem = ok(client.post("/v1/batches", json=body, headers=h), 422)
        assert problem["errors"][0]["field"] == field, problem

    other = post_project(client, tenant_key_a, "Other")
    wrong = {**base, "project_id": other["id"], "documents": documents_body(1)}
    assert ok(client.post("/v1/batches", json=wrong, headers=h), 422)["errors"][0]["field"] == (
        "workflow_id"
    )
    missing = {
        **base,
        "workflow_id": "wfl_00000000000000000000000000",
        "documents": documents_body(1),
    }
    assert ok(client.post("/v1/batches", json=missing, headers=h), 404)["detail"] == (
        "workflow not found"
    )


def test_list_by_project_workflow_and_creation_period(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    h = tenant_key_a.headers
    project_1, workflow_1 = _setup(client, tenant_key_a)
    workflow_2 = post_workflow(client, tenant_key_a, project_1, name="receipt")["id"]
    project_2 = post_project(client, tenant_key_a, name="Receipts")["id"]
    workflow_3 = post_workflow(client, tenant_key_a, project_2)["id"]
    a = post_batch(client, tenant_key_a, project_1, workflow_1)
    b = post_batch(client, tenant_key_a, project_1, workflow_2)
    c = post_batch(client, tenant_key_a, project_2, workflow_3)

    def ids(**query: str) -> list[str]:
        return [x["id"] for x in collect(client, "/v1/batches", h, 1, query)]

    assert ids(project_id=project_1) == [b["id"], a["id"]]
    assert ids(project_id=project_2) == [c["id"]]
    assert ids(workflow_id=workflow_2) == [b["id"]]
    assert ids(project_id=project_1, workflow_id=workflow_3) == []
    assert ids(project_id=project_2, status="CREATED") == [c["id"]]
    assert ids(project_id="prj_unknown") == []
    # Creation period: since inclusive, until exclusive.
    since = b["created_at"]
    assert ids(since=since, project_id=project_1) == [b["id"]]
    assert ids(until=since, project_id=project_1) == [a["id"]]
    assert ids(since=since, until=c["created_at"]) == [b["id"]]
    naive = ok(client.get("/v1/batches", params={"since": "2026-01-01T00:00:00"}, headers=h), 422)
    assert [e["field"] for e in naive["errors"]] == ["since"]
    long_id = ok(client.get("/v1/batches", params={"project_id": "p" * 41}, headers=h), 422)
    assert [e["field"] for e in long_id["errors"]] == ["project_id"]


def test_an_unknown_query_parameter_is_422_naming_it(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    h = tenant_key_a.headers
    project_id, workflow_id = _setup(client, tenant_key_a)
    post_batch(client, tenant_key_a, project_id, workflow_id)
    # The old mistake: a filter the endpoint lacks (here a misspelt one) must not list all.
    answer = client.get("/v1/batches", params={"project": project_id}, headers=h)
    problem = ok(answer, 422)
    assert answer.headers["content-type"] == "application/problem+json"
    assert problem["code"] == "invalid_input"
    assert problem["errors"] == [{"field": "project", "message": "Unknown query parameter"}]
    both = ok(client.get("/v1/projects", params={"b": "1", "a": "2", "limit": 5}, headers=h), 422)
    assert [e["field"] for e in both["errors"]] == ["a", "b"]
    # Declared ones, the pagination's included, pass on every kind of route.
    ok(client.get("/v1/batches", params={"limit": 1, "cursor": ""}, headers=h), 200)
    ok(client.get(f"/v1/projects/{project_id}", params={"x": "1"}, headers=h), 422)
    ok(client.delete(f"/v1/projects/{project_id}", params={"force": "1"}, headers=h), 422)
