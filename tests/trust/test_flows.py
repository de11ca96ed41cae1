"""Earned trust on the real runtime and engine: a new workflow's documents go to review until
its fields are trusted, a review becomes evidence through the `trust` consumer (off the request
path), and quality-assurance samples are marked in the document and review APIs."""

from __future__ import annotations

import time
from typing import Any

from docflow.documents import steps
from docflow.documents.outcome import Extracted
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import fail_internal
from docflow.runtime import context
from support.api_fixtures import ok, workflow_body
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    dbos_env,
    documents,
    invoice_pdf,
    setup,
    submit,
    wait_terminal,
)

PDF = "application/pdf"


def _with_workflow(setup: Setup, **keys: Any) -> Setup:  # noqa: F811
    url = f"/v1/projects/{setup.project_id}/workflows"
    body = workflow_body(f"wf-{len(keys)}-{sorted(keys)}", **keys)
    created = ok(setup.env.client.post(url, json=body, headers=setup.tenant.headers), 201)
    return Setup(setup.env, setup.tenant, setup.project_id, created["id"])


def _one_document(setup: Setup) -> dict[str, Any]:  # noqa: F811
    batch = submit(setup, [("a.pdf", PDF, invoice_pdf("INV-77", "77.00"))])
    wait_terminal(setup, batch["id"])
    [document] = documents(setup, batch["id"])
    return document


def _trust(setup: Setup) -> dict[str, Any]:  # noqa: F811
    url = f"/v1/workflows/{setup.workflow_id}/trust"
    answer: dict[str, Any] = ok(setup.env.client.get(url, headers=setup.tenant.headers), 200)
    return answer


def test_a_new_workflow_waits_for_review_and_the_review_becomes_evidence(
    setup: Setup,  # noqa: F811
) -> None:
    fresh = _with_workflow(setup, cold_start="review")
    document = _one_document(fresh)
    assert document["status"] == "REVIEW_REQUIRED" and document["qa_sample"] is False
    assert "invoice_number: not yet trusted (0 reviewed" in document["error_reason"]
    client, h = fresh.env.client, fresh.tenant.headers
    ok(client.post(f"/v1/documents/{document['id']}/claim", headers=h), 200)
    body = {"decision": "approve", "fields": {"total": "70.00"}, "reason": ""}
    reviewed = ok(client.post(f"/v1/documents/{document['id']}/review", json=body, headers=h), 200)
    assert reviewed["document"]["status"] == "SUCCEEDED"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _trust(fresh)["fields"][0]["examples"] == 0:
        time.sleep(0.1)
    fields = {f["name"]: f for f in _trust(fresh)["fields"]}
    assert (fields["invoice_number"]["examples"], fields["invoice_number"]["correct"]) == (1, 1)
    assert (fields["total"]["examples"], fields["total"]["correct"]) == (1, 0)
    assert fields["total"]["decided_by"] == "review" and fields["total"]["cut"] is None


def test_a_sampled_document_goes_to_review_marked_as_a_sample(
    setup: Setup,  # noqa: F811
) -> None:
    # Thresholds would pass it; every would-be SUCCEEDED document is a sample at rate 1.
    sampled = _with_workflow(setup, qa_sample_rate=1.0)
    document = _one_document(sampled)
    assert document["status"] == "REVIEW_REQUIRED" and document["qa_sample"] is True
    assert document["error_reason"] == "quality-assurance sample (qa_sample_rate 1)"
    client, h = sampled.env.client, sampled.tenant.headers
    shown = ok(client.get(f"/v1/documents/{document['id']}", headers=h), 200)
    assert shown["qa_sample"] is True
    # The review queue's next document (the only one awaiting review in this tenant).
    claimed = ok(client.post("/v1/review/next", headers=h), 200)
    assert claimed["document"]["id"] == document["id"]
    assert claimed["document"]["qa_sample"] is True
    # Without sampling the same document passes.
    assert _one_document(setup)["status"] == "SUCCEEDED"


def test_a_re_run_of_a_failed_document_goes_through_the_same_gate(
    setup: Setup,  # noqa: F811
) -> None:
    fresh = _with_workflow(setup, cold_start="review")
    batch = submit(
        fresh,
        [("a.pdf", PDF, invoice_pdf("INV-8", "8.00"))],
        scheduled_for="2099-01-01T00:00:00Z",
    )
    document_id, tenant_id = batch["documents"][0]["id"], fresh.tenant.tenant_id
    services = context.services()
    with services.write_session() as session, session.begin():
        fail_internal(
            session,
            services.client,
            tenant_id=tenant_id,
            document_id=document_id,
            reason="boom",
            category="RuntimeError",
            attempts=1,
        )
        version = DocumentRepository(session, tenant_id).get(document_id).version  # type: ignore[union-attr]
    confident = {"value": "x", "confidence": 0.99}
    extraction = Extracted(
        status="SUCCEEDED",
        confidence=0.99,
        reasons=(),
        result={"fields": {"invoice_number": confident, "total": confident}},
        result_ref=None,
        version=version,
        batch_id=batch["id"],
    )
    with services.write_session() as session, session.begin():
        status = steps.revise(
            session, tenant_id=tenant_id, document_id=document_id, extraction=extraction
        )
    assert status == "REVIEW_REQUIRED"
