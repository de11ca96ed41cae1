"""Review over HTTP: the real app on the test database, tenants with real API keys. One path
end to end (query, claim, correct, approve, audit), the problem answers, scopes, and reviewers
racing for the queue from concurrent clients."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext, from_credential
from docflow.tenants import service as tenants_service
from support.api_fixtures import ApiTenant, collect, make_api_tenant, ok
from support.review_fixtures import reviewable_batch


def _key(factory: sessionmaker[Session], tenant: ApiTenant, scopes: list[str]) -> dict[str, str]:
    with factory.begin() as session:
        _, token = tenants_service.create_api_key(
            session, tenant.tenant_id, name="reviewer", scopes=scopes
        )
    return {"Authorization": f"Bearer {token}"}


def _batch(
    factory: sessionmaker[Session], tenant: ApiTenant, review: int, succeeded: int = 0
) -> dict[str, Any]:
    with factory.begin() as session:
        context = TenantContext(tenant_id=from_credential(tenant.tenant_id))
        batch = reviewable_batch(session, context, review=review, succeeded=succeeded)
        return {
            "id": batch.id,
            "project_id": batch.project_id,
            "workflow_id": batch.workflow_id,
            "documents": [d.id for d in batch.documents],
        }


def _problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    return body


@pytest.fixture
def tenant(session_factory: sessionmaker[Session]) -> ApiTenant:
    return make_api_tenant(session_factory, "Review")


def test_query_claim_correct_approve_and_read_the_audit(
    client: TestClient, session_factory: sessionmaker[Session], tenant: ApiTenant
) -> None:
    h = tenant.headers
    batch = _batch(session_factory, tenant, review=2, succeeded=1)
    waiting, other, done = batch["documents"]
    listed = ok(client.get("/v1/documents", params={"field": "total"}, headers=h), 200)
    assert [d["id"] for d in listed["items"]] == [other, waiting]  # newest first
    assert listed["items"][0]["project_id"] == batch["project_id"]
    claim = ok(client.post(f"/v1/documents/{waiting}/claim", headers=h), 200)
    assert claim["reviewer"] == tenant.key_id
    body = {"fields": {"total": "12.5"}, "decision": "approve", "reason": "checked"}
    reviewed = ok(client.post(f"/v1/documents/{waiting}/review", json=body, headers=h), 200)
    assert reviewed["document"]["status"] == "SUCCEEDED"
    assert reviewed["document"]["reviewed"] is True
    assert reviewed["review"]["fields"] == [
        {
            "field": "total",
            "original_value": None,
            "original_confidence": 0.6,
            "corrected_value": "12.50",
        }
    ]
    detail = ok(client.get(f"/v1/documents/{waiting}", headers=h), 200)
    assert detail["result"]["fields"]["total"]["value"] == "12.50"
    trail = ok(client.get(f"/v1/documents/{waiting}/reviews", headers=h), 200)["items"]
    assert [(r["decision"], r["reviewer"], r["reason"]) for r in trail] == [
        ("approve", tenant.key_id, "checked")
    ]
    # The reviewed document left the "needs review" query; the batch still waits for one.
    listed = ok(client.get("/v1/documents", params={"field": "total"}, headers=h), 200)
    assert [d["id"] for d in listed["items"]] == [other]
    assert ok(client.get(f"/v1/batches/{batch['id']}", headers=h), 200)["status"] == (
        "REVIEW_REQUIRED"
    )
    succeeded = ok(client.get("/v1/documents", params={"status": "SUCCEEDED"}, headers=h), 200)
    assert {d["id"] for d in succeeded["items"]} == {waiting, done}


def test_review_conflicts_and_bad_values_are_problems(
    client: TestClient, session_factory: sessionmaker[Session], tenant: ApiTenant
) -> None:
    alice = tenant.headers
    bob = _key(session_factory, tenant, ["review", "read"])
    document, finished = _batch(session_factory, tenant, review=1, succeeded=1)["documents"]
    url = f"/v1/documents/{document}"
    approve = {"fields": {"total": "12.50"}, "decision": "approve"}
    _problem(client.post(f"{url}/review", json=approve, headers=alice), 409, "claim_required")
    _problem(client.post(f"/v1/documents/{finished}/claim", headers=alice), 409, "not_in_review")
    ok(client.post(f"{url}/claim", headers=alice), 200)
    _problem(client.post(f"{url}/claim", headers=bob), 409, "claimed_by_other")
    _problem(client.post(f"{url}/review", json=approve, headers=bob), 409, "claimed_by_other")
    _problem(client.delete(f"{url}/claim", headers=bob), 409, "claimed_by_other")
    bad = client.post(
        f"{url}/review", json={"fields": {"total": "lots"}, "decision": "approve"}, headers=alice
    )
    assert _problem(bad, 422, "invalid_input")["errors"][0]["field"] == "fields.total"
    wrong = client.post(f"{url}/review", json={"decision": "perhaps"}, headers=alice)
    assert _problem(wrong, 422, "invalid_input")["errors"][0]["field"] == "decision"
    assert client.delete(f"{url}/claim", headers=alice).status_code == 204
    assert client.delete(f"{url}/claim", headers=alice).status_code == 204  # nothing held
    ok(client.post(f"{url}/claim", headers=bob), 200)
    reject = {"decision": "reject", "reason": "not an invoice"}
    rejected = ok(client.post(f"{url}/review", json=reject, headers=bob), 200)["document"]
    assert (rejected["status"], rejected["error_code"]) == ("FAILED", "rejected_in_review")
    _problem(client.post(f"{url}/review", json=reject, headers=bob), 409, "claim_required")
    bad_query = client.get("/v1/documents", params={"since": "2026-01-01T00:00:00"}, headers=bob)
    assert _problem(bad_query, 422, "invalid_input")["errors"][0]["field"] == "since"
    not_a_field = client.get("/v1/documents", params={"field": "To-tal"}, headers=bob)
    assert _problem(not_a_field, 422, "invalid_input")["errors"][0]["field"] == "field"


def test_review_needs_the_review_scope_and_reads_the_read_scope(
    client: TestClient, session_factory: sessionmaker[Session], tenant: ApiTenant
) -> None:
    [document] = _batch(session_factory, tenant, review=1)["documents"]
    reader = _key(session_factory, tenant, ["read"])
    writer = _key(session_factory, tenant, ["write"])
    for method, url in (
        ("POST", f"/v1/documents/{document}/claim"),
        ("GET", "/v1/review/next"),
        ("POST", "/v1/review/next"),
    ):
        _problem(client.request(method, url, headers=reader), 403, "forbidden")
    ok(client.get(f"/v1/documents/{document}/reviews", headers=reader), 200)
    # `write` implies `review`, but not `read`.
    ok(client.post(f"/v1/documents/{document}/claim", headers=writer), 200)
    _problem(client.get(f"/v1/documents/{document}/reviews", headers=writer), 403, "forbidden")


def test_the_queue_serves_the_oldest_unclaimed_then_nothing(
    client: TestClient, session_factory: sessionmaker[Session], tenant: ApiTenant
) -> None:
    first = _batch(session_factory, tenant, review=1)
    second = _batch(session_factory, tenant, review=1)
    h = tenant.headers
    taken = ok(client.get("/v1/review/next", headers=h), 200)
    assert taken["document"]["id"] == first["documents"][0]
    assert taken["claim"]["reviewer"] == tenant.key_id
    by_project = client.post(
        "/v1/review/next", params={"project_id": first["project_id"]}, headers=h
    )
    assert ok(by_project, 200) == {"document": None, "claim": None}
    assert (
        ok(client.post("/v1/review/next", headers=h), 200)["document"]["id"]
        == (second["documents"][0])
    )
    assert ok(client.post("/v1/review/next", headers=h), 200)["document"] is None


def test_document_queries_page_newest_first_and_filter(
    client: TestClient, session_factory: sessionmaker[Session], tenant: ApiTenant
) -> None:
    start = utcnow() - timedelta(seconds=1)
    older = _batch(session_factory, tenant, review=2, succeeded=1)
    newer = _batch(session_factory, tenant, review=0, succeeded=2)
    h = tenant.headers
    everything = collect(client, "/v1/documents", h, limit=2)
    expected = list(reversed(older["documents"] + newer["documents"]))
    assert [d["id"] for d in everything] == expected
    cases: list[tuple[dict[str, str], Callable[[list[str]], bool]]] = [
        ({"batch_id": older["id"]}, lambda ids: ids == older["documents"][::-1]),
        ({"project_id": newer["project_id"]}, lambda ids: ids == newer["documents"][::-1]),
        ({"workflow_id": older["workflow_id"]}, lambda ids: ids == older["documents"][::-1]),
        ({"status": "REVIEW_REQUIRED"}, lambda ids: ids == older["documents"][1::-1]),
        ({"since": start.isoformat()}, lambda ids: ids == expected),
        ({"until": start.isoformat()}, lambda ids: ids == []),
        ({"field": "invoice_number"}, lambda ids: ids == []),
        ({"field": "total", "status": "SUCCEEDED"}, lambda ids: ids == []),
        ({"batch_id": "bat_00000000000000000000000000"}, lambda ids: ids == []),
    ]
    for query, check in cases:
        ids = [d["id"] for d in collect(client, "/v1/documents", h, limit=1, query=query)]
        assert check(ids), (query, ids)
    foreign = client.get("/v1/documents", params={"cursor": "W1siYSJdXQ", "limit": 1}, headers=h)
    assert _problem(foreign, 422, "invalid_input")["errors"][0]["field"] == "cursor"


def test_reviewers_racing_for_the_queue_never_share_a_document(
    client: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = make_api_tenant(session_factory, "Review race")
    documents = set(_batch(session_factory, tenant, review=6)["documents"])
    reviewers = [_key(session_factory, tenant, ["review", "read"]) for _ in range(8)]
    barrier = threading.Barrier(len(reviewers))

    def take(headers: dict[str, str]) -> list[str]:
        barrier.wait()
        got = []
        while (taken := ok(client.post("/v1/review/next", headers=headers), 200))["document"]:
            got.append(taken["document"]["id"])
        assert taken["claim"] is None
        return got

    with ThreadPoolExecutor(len(reviewers)) as pool:
        taken = [doc for got in pool.map(take, reviewers) for doc in got]
    assert sorted(taken) == sorted(documents)  # each handed out exactly once


def test_deleting_a_reviewed_batch_removes_its_claims_and_reviews(
    client: TestClient, session_factory: sessionmaker[Session], tenant: ApiTenant
) -> None:
    h = tenant.headers
    batch = _batch(session_factory, tenant, review=2)
    reviewed, claimed = batch["documents"]
    ok(client.post(f"/v1/documents/{reviewed}/claim", headers=h), 200)
    body = {"fields": {"total": "12.5"}, "decision": "approve", "reason": "checked"}
    ok(client.post(f"/v1/documents/{reviewed}/review", json=body, headers=h), 200)
    ok(client.post(f"/v1/documents/{claimed}/claim", headers=h), 200)
    # Terminal (awaiting review): nothing to cancel, but it may be deleted.
    _problem(client.post(f"/v1/batches/{batch['id']}/cancel", headers=h), 409, "batch_finished")
    counts = "SELECT (SELECT count(*) FROM review_claims), (SELECT count(*) FROM document_reviews)"

    def rows() -> tuple[int, int]:
        with session_factory() as session:
            db.bind_tenant(session, tenant.tenant_id)
            claims, reviews = session.execute(text(counts)).one()
            return int(claims), int(reviews)

    before = rows()
    assert before[0] >= 1 and before[1] >= 1
    assert client.delete(f"/v1/batches/{batch['id']}", headers=h).status_code == 204
    assert rows() == (before[0] - 1, before[1] - 1)  # the tenant's others, if any, stay
    _problem(client.get(f"/v1/documents/{reviewed}/reviews", headers=h), 404, "not_found")
    _problem(client.post(f"/v1/documents/{claimed}/claim", headers=h), 404, "not_found")
