"""`PUT /v1/uploads/{token}` and `POST /v1/documents/{id}/uploaded`: the token is the credential,
sizes are enforced before anything is stored, and a second delivery changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

from dbos import DBOS

from docflow.documents.upload_urls import sign_upload
from support.api_fixtures import ok
from support.dbos_fixtures import (  # noqa: F401
    Setup,
    create_batch,
    dbos_env,
    documents,
    get_batch,
    invoice_pdf,
    setup,
    upload_path,
    wait_terminal,
)

PDF = "application/pdf"


def _stored_files(case: Setup, document_id: str) -> list[Path]:
    folder = case.env.settings.home / "files" / "tenants" / case.tenant.tenant_id / "documents"
    return sorted((folder / document_id).glob("*")) if (folder / document_id).exists() else []


def _problem(response: object, status: int, code: str) -> None:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    assert response.headers["content-type"] == "application/problem+json"  # type: ignore[attr-defined]
    assert response.json()["code"] == code  # type: ignore[attr-defined]


def test_tampered_and_expired_upload_urls_are_403(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-1", "1.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf))])
    path = upload_path(batch["documents"][0]["upload_url"])
    version, payload, mac = path.rsplit("/", 1)[1].split(".")
    flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B")
    tampered = path.rsplit("/", 1)[0] + f"/{version}.{flipped}.{mac}"
    _problem(setup.env.client.put(tampered, content=pdf), 403, "invalid_upload_url")
    expired = sign_upload(
        setup.env.settings.signing_secret,
        tenant_id=setup.tenant.tenant_id,
        document_id=batch["documents"][0]["id"],
        content_type=PDF,
        max_bytes=len(pdf),
        expires_at=int(time.time()) - 1,
    )
    _problem(setup.env.client.put(f"/v1/uploads/{expired}", content=pdf), 403, "upload_url_expired")
    assert _stored_files(setup, batch["documents"][0]["id"]) == []
    assert documents(setup, batch["id"])[0]["status"] == "PENDING_UPLOAD"


def test_oversize_upload_is_413_and_nothing_is_stored(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-2", "2.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf) - 1)])
    path = upload_path(batch["documents"][0]["upload_url"])
    # Announced by Content-Length, then streamed without a length (chunked).
    _problem(setup.env.client.put(path, content=pdf), 413, "file_too_large")
    chunks = (pdf[i : i + 100] for i in range(0, len(pdf), 100))
    _problem(setup.env.client.put(path, content=chunks), 413, "file_too_large")
    assert _stored_files(setup, batch["documents"][0]["id"]) == []
    assert documents(setup, batch["id"])[0]["status"] == "PENDING_UPLOAD"
    assert get_batch(setup, batch["id"])["uploaded_count"] == 0


def test_a_second_upload_of_a_landed_document_is_a_no_op(setup: Setup) -> None:  # noqa: F811
    first, second = invoice_pdf("INV-3", "3.00"), invoice_pdf("INV-4", "4.00")
    size = max(len(first), len(second))
    batch = create_batch(setup, [("a.pdf", PDF, size), ("b.pdf", PDF, size)])
    path = upload_path(batch["documents"][0]["upload_url"])
    landed = ok(setup.env.client.put(path, content=first), 200)
    again = ok(setup.env.client.put(path, content=second), 200)
    assert landed["status"] == again["status"] == "UPLOADED"
    assert again["sha256"] == landed["sha256"] and again["size"] == len(first)
    assert len(_stored_files(setup, landed["id"])) == 1  # the losing delivery removed its bytes
    batch_now = get_batch(setup, batch["id"])
    assert (batch_now["uploaded_count"], batch_now["status"]) == (1, "CREATED")
    assert DBOS.list_workflows(workflow_ids=[batch["id"]]) == []  # one of two landed: no start


def test_a_scheduled_batch_waits_for_its_time_even_when_every_file_landed(
    setup: Setup,  # noqa: F811
) -> None:
    pdf = invoice_pdf("INV-5", "5.00")
    later = "2099-01-01T00:00:00+00:00"
    batch = create_batch(setup, [("a.PDF", PDF, len(pdf))], scheduled_for=later)
    ok(setup.env.client.put(upload_path(batch["documents"][0]["upload_url"]), content=pdf), 200)
    assert get_batch(setup, batch["id"])["status"] == "CREATED"
    assert DBOS.list_workflows(workflow_ids=[batch["id"]]) == []


def test_confirming_an_upload_without_a_stored_object_is_409(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-6", "6.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf))])
    url = f"/v1/documents/{batch['documents'][0]['id']}/uploaded"
    _problem(setup.env.client.post(url, headers=setup.tenant.headers), 409, "conflict")


def test_the_last_landing_starts_the_batch(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-7", "7.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf))])
    ok(setup.env.client.put(upload_path(batch["documents"][0]["upload_url"]), content=pdf), 200)
    assert wait_terminal(setup, batch["id"])["status"] == "SUCCEEDED"
