"""`PUT /v1/uploads/{token}`, `POST /v1/documents/{id}/uploaded` and `.../upload-url`: the token
is the credential, sizes and the signed type are enforced before anything is stored, a second
delivery changes nothing, and an awaited document gets a new URL in either storage mode."""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from dbos import DBOS
from fastapi.testclient import TestClient

from docflow.client.remote import upload_request
from docflow.documents.uploads.service import reconcile_uploads
from docflow.documents.uploads.urls import sign_upload
from docflow.main import create_app
from docflow.storage.sealed import unwrap_storage
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
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
from support.s3_server import S3Server, s3_server  # noqa: F401

PDF = "application/pdf"


def _stored_files(case: Setup, document_id: str) -> list[Path]:
    folder = case.env.settings.home / "files" / "tenants" / case.tenant.tenant_id / "documents"
    return sorted((folder / document_id).glob("*")) if (folder / document_id).exists() else []


def _problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = response.json()
    assert problem["code"] == code
    return problem


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


def test_upload_problems_never_echo_the_token(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-12", "12.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf) - 1)])
    path = upload_path(batch["documents"][0]["upload_url"])
    token = path.rsplit("/", 1)[1]
    tampered = f"{token[:-1]}{'A' if token[-1] != 'A' else 'B'}"
    expired = sign_upload(
        setup.env.settings.signing_secret,
        tenant_id=setup.tenant.tenant_id,
        document_id=batch["documents"][0]["id"],
        content_type=PDF,
        max_bytes=len(pdf),
        expires_at=int(time.time()) - 1,
    )
    client = setup.env.client
    answers = [
        (client.put(f"/v1/uploads/{tampered}", content=pdf), 403, "invalid_upload_url"),
        (client.put(f"/v1/uploads/{expired}", content=pdf), 403, "upload_url_expired"),
        (client.put(path, content=pdf), 413, "file_too_large"),
        (client.get(path), 405, "method_not_allowed"),
    ]
    for response, status, code in answers:
        problem = _problem(response, status, code)
        assert "instance" not in problem, problem
        for secret in (token, tampered, expired, token.split(".")[2]):
            assert secret not in response.text


def test_a_content_type_other_than_the_signed_one_is_403_and_nothing_is_stored(
    setup: Setup,  # noqa: F811
) -> None:
    pdf = invoice_pdf("INV-13", "13.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf))])
    path = upload_path(batch["documents"][0]["upload_url"])
    for sent in ("image/png", "application/x-www-form-urlencoded", "application/pdf; x=1"):
        response = setup.env.client.put(path, content=pdf, headers={"Content-Type": sent})
        problem = _problem(response, 403, "upload_content_type_mismatch")
        assert problem["expected_content_type"] == PDF
    assert _stored_files(setup, batch["documents"][0]["id"]) == []
    assert documents(setup, batch["id"])[0]["status"] == "PENDING_UPLOAD"
    landed = setup.env.client.put(path, content=pdf, headers={"Content-Type": PDF})
    assert ok(landed, 200)["status"] == "UPLOADED"


def test_an_expired_upload_url_is_replaced_until_the_file_lands(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-14", "14.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf)), ("b.pdf", PDF, len(pdf))])
    first, second = batch["documents"]
    client, h = setup.env.client, setup.tenant.headers
    assert first["upload"]["url"] == first["upload_url"]
    expired = sign_upload(
        setup.env.settings.signing_secret,
        tenant_id=setup.tenant.tenant_id,
        document_id=first["id"],
        content_type=PDF,
        max_bytes=len(pdf),
        expires_at=int(time.time()) - 1,
    )
    _problem(client.put(f"/v1/uploads/{expired}", content=pdf), 403, "upload_url_expired")
    fresh = ok(client.post(f"/v1/documents/{first['id']}/upload-url", headers=h), 200)
    assert {k: fresh[k] for k in ("id", "name", "content_type", "declared_size")} == {
        k: first[k] for k in ("id", "name", "content_type", "declared_size")
    }
    target = fresh["upload"]
    assert (target["method"], target["headers"]) == ("PUT", {"Content-Type": PDF})
    assert target["url"] == fresh["upload_url"]
    assert target["expires_at"] >= first["upload"]["expires_at"]
    put = client.put(upload_path(target["url"]), content=pdf, headers=target["headers"])
    assert ok(put, 200)["status"] == "UPLOADED"
    # Landed, started, or past the deadline (see the service tests): 409 naming why.
    again = client.post(f"/v1/documents/{first['id']}/upload-url", headers=h)
    _problem(again, 409, "document_already_uploaded")
    ok(client.post(f"/v1/batches/{batch['id']}/start", headers=h), 202)
    wait_terminal(setup, batch["id"])
    started = client.post(f"/v1/documents/{second['id']}/upload-url", headers=h)
    _problem(started, 409, "batch_started")


def test_oversize_upload_is_413_and_nothing_is_stored(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-2", "2.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf) - 1)])
    path = upload_path(batch["documents"][0]["upload_url"])
    # Announced by Content-Length, then streamed without a length (chunked); both say the limit.
    announced = _problem(setup.env.client.put(path, content=pdf), 413, "file_too_large")
    chunks = (pdf[i : i + 100] for i in range(0, len(pdf), 100))
    streamed = _problem(setup.env.client.put(path, content=chunks), 413, "file_too_large")
    assert announced["max_bytes"] == streamed["max_bytes"] == len(pdf) - 1
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
    # A confirmation after the upload landed (through either path) changes nothing either.
    confirm = f"/v1/documents/{landed['id']}/uploaded"
    confirmed = ok(setup.env.client.post(confirm, headers=setup.tenant.headers), 200)
    assert (confirmed["status"], confirmed["sha256"]) == ("UPLOADED", landed["sha256"])
    assert get_batch(setup, batch["id"])["uploaded_count"] == 1


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


def _post(document: dict[str, Any], data: bytes) -> httpx.Response:
    """Send `data` to the document's upload target as the remote CLI does."""
    method, url, sent = upload_request(document, data, filename="f.pdf", size=len(data))
    return httpx.request(method, url, **sent)


@pytest.mark.parametrize("encrypted", [False, True])
def test_s3_mode_hands_out_presigned_posts_bound_to_the_declared_size(
    dbos_env: DbosEnv,  # noqa: F811
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    encrypted: bool,
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    bucket = f"uploads-{'sealed' if encrypted else 'plain'}"
    storage_url = f"s3://{bucket}?endpoint_url={s3_server.endpoint_url}"
    settings = dbos_env.settings.model_copy(
        update={"storage_url": storage_url, "encrypt_files": encrypted}
    )
    app = create_app(settings, engine=dbos_env.engine)
    unwrap_storage(app.state.storage).client.create_bucket(Bucket=bucket)
    storage = app.state.storage
    with TestClient(app) as client:
        case = Setup(dbos_env, dbos_env.tenant(), "", "")
        project = post_project(client, case.tenant)
        workflow = post_workflow(client, case.tenant, project["id"])
        case = Setup(replace(dbos_env, client=client), case.tenant, project["id"], workflow["id"])
        pdf = invoice_pdf("INV-8", "8.00")
        # Four documents, never all landed: the batch must not start (the runtime launched for
        # these tests reads local files).
        declared = [
            ("a.pdf", PDF, len(pdf)),
            ("b.pdf", PDF, 10),
            ("c", PDF, 10),
            ("d", PDF, 10),
            ("e", PDF, 10),
        ]
        batch = create_batch(case, declared)
        first, second, third, fourth, fifth = batch["documents"]
        target = first["upload"]
        assert (target["method"], target["headers"]) == ("POST", {})
        assert target["url"] == first["upload_url"] == f"{s3_server.endpoint_url}/{bucket}"
        incoming = f"tenants/{case.tenant.tenant_id}/documents/{first['id']}/original"
        assert target["fields"]["key"] == incoming
        assert target["fields"]["Content-Type"] == PDF
        # S3 itself refuses a body of another size or type (moto does not evaluate policies).
        policy = json.loads(base64.b64decode(target["fields"]["policy"]))
        assert ["content-length-range", len(pdf), len(pdf)] in policy["conditions"]
        assert {"Content-Type": PDF} in policy["conditions"]
        assert _post(first, pdf).status_code == 204
        url = f"/v1/documents/{first['id']}/uploaded"
        landed = ok(client.post(url, headers=case.tenant.headers), 200)
        assert (landed["status"], landed["size"], landed["detected_type"]) == (
            "UPLOADED",
            len(pdf),
            "pdf",
        )
        assert landed["sha256"] == hashlib.sha256(pdf).hexdigest()
        # The landed file was moved to a key no upload form names: posting again (the form is
        # still valid) cannot change it, and what was posted is removed at the next look.
        assert storage.head(incoming) is None
        forged = b"%PDF-1.4 " + b"x" * (len(pdf) - 9)
        assert _post(first, forged).status_code == 204
        assert ok(client.post(url, headers=case.tenant.headers), 200) == landed  # a no-op
        assert storage.head(incoming) is None
        file = f"/v1/documents/{first['id']}/file"
        download = client.get(file, headers=case.tenant.headers, follow_redirects=False)
        if encrypted:  # the bucket holds ciphertext: the API streams the file itself
            assert (download.status_code, download.content) == (200, pdf)
        else:
            assert httpx.get(download.headers["location"]).content == pdf
        # A file that happens to begin as a sealed object does is a client's file like any
        # other: taken as posted, never decrypted.
        lookalike = b"DFSEAL\x01\x00\x00\x00"
        assert _post(fifth, lookalike).status_code == 204
        taken = ok(
            client.post(f"/v1/documents/{fifth['id']}/uploaded", headers=case.tenant.headers), 200
        )
        assert (taken["size"], taken["sha256"]) == (10, hashlib.sha256(lookalike).hexdigest())
        # An object larger or smaller than declared is refused and removed, never recorded.
        for document, body, status, code in (
            (second, b"x" * 11, 413, "file_too_large"),
            (third, b"%PDF-1.4 ", 422, "file_size_mismatch"),
        ):
            assert _post(document, body).status_code == 204  # moto stores any size
            refused = client.post(
                f"/v1/documents/{document['id']}/uploaded", headers=case.tenant.headers
            )
            _problem(refused, status, code)
            key = f"tenants/{case.tenant.tenant_id}/documents/{document['id']}/original"
            assert storage.head(key) is None
        assert get_batch(case, batch["id"])["uploaded_count"] == 2
        waiting = {d["id"]: d["status"] for d in documents(case, batch["id"])}
        assert waiting[second["id"]] == waiting[third["id"]] == "PENDING_UPLOAD"
        # A new presigned form for an awaited document, bound like the first.
        reissue = f"/v1/documents/{fourth['id']}/upload-url"
        fresh = ok(client.post(reissue, headers=case.tenant.headers), 200)
        assert fresh["upload"]["method"] == "POST"
        policy = json.loads(base64.b64decode(fresh["upload"]["fields"]["policy"]))
        assert ["content-length-range", 10, 10] in policy["conditions"]
        # A file posted without the confirmation is found by the reconciler, once.
        assert _post(fresh, b"%PDF-1.4 x").status_code == 204
        storage, dbos_client = app.state.storage, app.state.dbos_client
        factory = app.state.write_session_factory
        assert reconcile_uploads(factory, storage, dbos_client) == 1
        assert reconcile_uploads(factory, storage, dbos_client) == 0
        (reconciled,) = [d for d in documents(case, batch["id"]) if d["id"] == fourth["id"]]
        assert (reconciled["status"], reconciled["size"]) == ("UPLOADED", 10)
        assert get_batch(case, batch["id"])["uploaded_count"] == 3


def test_the_last_two_uploads_landing_together_start_one_execution(
    setup: Setup,  # noqa: F811
) -> None:
    pdfs = [invoice_pdf(f"INV-{i}", f"{i}.00") for i in (10, 11)]
    batch = create_batch(setup, [(f"{i}.pdf", PDF, len(p)) for i, p in enumerate(pdfs)])
    paths = [upload_path(d["upload_url"]) for d in batch["documents"]]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(
            pool.map(
                lambda a: setup.env.client.put(a[0], content=a[1]), zip(paths, pdfs, strict=True)
            )
        )
    assert [a.status_code for a in answers] == [200, 200]
    done = wait_terminal(setup, batch["id"])
    assert (done["status"], done["uploaded_count"], done["succeeded_count"]) == ("SUCCEEDED", 2, 2)
    assert len(DBOS.list_workflows(workflow_ids=[batch["id"]])) == 1
