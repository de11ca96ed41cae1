"""Documents through HTTP: a batch's documents by page and status, one document with its result."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.documents.repository import DocumentRepository
from support.api_fixtures import ApiTenant, collect, make_objects, ok, post_batch

RESULT: dict[str, Any] = {
    "status": "SUCCEEDED",
    "confidence": 0.93,
    "fields": {"total": {"name": "total", "value": "12.50", "confidence": 0.93}},
}


def _finish(factory: sessionmaker[Session], tenant_id: str, document_id: str) -> None:
    """Record a result the way the pipeline does: a compare-and-set on the document row."""
    with factory() as session:
        repo = DocumentRepository(session, tenant_id)
        won = repo.compare_and_set(
            document_id, expected_version=1, status="SUCCEEDED", confidence=0.93, result=RESULT
        )
        assert won
        session.commit()


def test_list_a_batch_documents_by_page_and_status(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    objects = make_objects(client, tenant_key_a)
    h = tenant_key_a.headers
    batch = post_batch(
        client, tenant_key_a, objects.project["id"], objects.workflow["id"], documents=5
    )
    url = f"/v1/batches/{batch['id']}/documents"
    listed = collect(client, url, h, limit=2)
    assert [d["id"] for d in listed] == [d["id"] for d in batch["documents"]]
    assert {d["status"] for d in listed} == {"PENDING_UPLOAD"}
    assert all(d["batch_id"] == batch["id"] for d in listed)

    done = batch["documents"][3]["id"]
    _finish(session_factory, tenant_key_a.tenant_id, done)
    succeeded = collect(client, url, h, 2, {"status": "SUCCEEDED"})
    assert [d["id"] for d in succeeded] == [done]
    pending = collect(client, url, h, 3, {"status": "PENDING_UPLOAD"})
    assert len(pending) == 4 and done not in {d["id"] for d in pending}
    bad = ok(client.get(url, params={"status": "LOST"}, headers=h), 422)
    assert [e["field"] for e in bad["errors"]] == ["status"]


def test_get_document_with_and_without_result(
    client: TestClient, tenant_key_a: ApiTenant, session_factory: sessionmaker[Session]
) -> None:
    objects = make_objects(client, tenant_key_a)
    h = tenant_key_a.headers
    url = f"/v1/documents/{objects.document_id}"
    pending = ok(client.get(url, headers=h), 200)
    assert pending["status"] == "PENDING_UPLOAD"
    assert pending["result"] is None
    assert (pending["name"], pending["declared_size"], pending["size"]) == (
        "doc-000.pdf",
        1000,
        None,
    )
    assert pending["content_type"] == "application/pdf"

    _finish(session_factory, tenant_key_a.tenant_id, objects.document_id)
    done = ok(client.get(url, headers=h), 200)
    assert (done["status"], done["confidence"]) == ("SUCCEEDED", 0.93)
    assert done["result"] == RESULT


def test_documents_of_a_missing_batch(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.get(
        "/v1/batches/bat_00000000000000000000000000/documents", headers=tenant_key_a.headers
    )
    assert ok(response, 404)["detail"] == "batch not found"
    missing = client.get(
        "/v1/documents/doc_00000000000000000000000000", headers=tenant_key_a.headers
    )
    assert ok(missing, 404)["detail"] == "document not found"
