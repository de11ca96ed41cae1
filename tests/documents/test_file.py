"""`GET /v1/documents/{id}/file`: the original as uploaded (local storage streams it, S3
answers 307 to a presigned GET), with its declared type and a safely quoted name; 404
`file_not_uploaded` before it landed."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import httpx
import pytest
from fastapi.testclient import TestClient

from docflow.client.remote import upload_request
from docflow.documents.service import content_disposition
from docflow.main import create_app
from docflow.storage.sealed import unwrap_storage
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    create_batch,
    dbos_env,
    invoice_pdf,
    setup,
    submit,
    upload_path,
)
from support.s3_server import S3Server, s3_server  # noqa: F401

PDF = "application/pdf"


def test_the_original_is_streamed_with_its_type_and_name(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-31", "31.00")
    name = 'Rechnung "März"\r\n.pdf'
    batch = create_batch(setup, [(name, PDF, len(pdf)), ("later.pdf", PDF, 10)])
    landed, waiting = batch["documents"]
    client, h = setup.env.client, setup.tenant.headers
    missing = client.get(f"/v1/documents/{waiting['id']}/file", headers=h)
    assert missing.status_code == 404
    assert missing.json()["code"] == "file_not_uploaded"
    ok(client.put(upload_path(landed["upload_url"]), content=pdf), 200)
    response = client.get(f"/v1/documents/{landed['id']}/file", headers=h)
    assert response.status_code == 200, response.text
    assert response.content == pdf
    assert hashlib.sha256(response.content).hexdigest() == hashlib.sha256(pdf).hexdigest()
    assert response.headers["content-type"] == PDF
    assert response.headers["x-content-type-options"] == "nosniff"
    disposition = response.headers["content-disposition"]
    assert disposition == (
        'attachment; filename="Rechnung _M_rz___.pdf"; '
        "filename*=UTF-8''Rechnung%20%22M%C3%A4rz%22%0D%0A.pdf"
    )
    unknown = client.get("/v1/documents/doc_missing/file", headers=h)
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")


def test_a_disposition_never_breaks_out_of_its_quotes() -> None:
    for name in ['a"; filename="evil.html', "a\\", "100%.pdf", "\u202ereversed", "x\x00y"]:
        value = content_disposition(name)
        quoted = value.split('filename="', 1)[1].split('"; filename*=', 1)[0]
        assert '"' not in quoted and "\\" not in quoted and "%" not in quoted
        assert all(" " <= c <= "~" for c in value)


@pytest.mark.parametrize("encrypted", [False, True])
def test_s3_mode_redirects_to_a_presigned_get_or_streams_a_sealed_file(
    dbos_env: DbosEnv,  # noqa: F811
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    encrypted: bool,
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    bucket = f"downloads-{'sealed' if encrypted else 'plain'}"
    storage_url = f"s3://{bucket}?endpoint_url={s3_server.endpoint_url}"
    settings = dbos_env.settings.model_copy(
        update={"storage_url": storage_url, "encrypt_files": encrypted}
    )
    app = create_app(settings, engine=dbos_env.engine)
    raw = unwrap_storage(app.state.storage)
    raw.client.create_bucket(Bucket=bucket)
    with TestClient(app) as client:
        case = Setup(dbos_env, dbos_env.tenant(), "", "")
        project = post_project(client, case.tenant)
        workflow = post_workflow(client, case.tenant, project["id"])
        case = Setup(replace(dbos_env, client=client), case.tenant, project["id"], workflow["id"])
        pdf = invoice_pdf("INV-9", "9.00")
        # Two documents, one never landed: the batch does not start.
        batch = create_batch(case, [("inv 9.pdf", PDF, len(pdf)), ("b.pdf", PDF, 10)])
        first = batch["documents"][0]
        method, post, sent = upload_request(first, pdf, filename="inv 9.pdf", size=len(pdf))
        assert httpx.request(method, post, **sent).status_code == 204
        ok(client.post(f"/v1/documents/{first['id']}/uploaded", headers=case.tenant.headers), 200)
        url = f"/v1/documents/{first['id']}/file"
        answer = client.get(url, headers=case.tenant.headers, follow_redirects=False)
        if encrypted:  # the bucket holds ciphertext: the API streams the decrypted file
            assert answer.status_code == 200, answer.text
            fetched = answer
            listed = raw.client.list_objects_v2(Bucket=bucket)["Contents"]
            assert len(listed) == 1  # the unsealed upload was removed once taken
            stored = raw.read_bytes(listed[0]["Key"], max_bytes=10 * len(pdf))
            assert stored != pdf and pdf[:64] not in stored
        else:
            assert answer.status_code == 307, answer.text
            location = answer.headers["location"]
            assert location.startswith(f"{s3_server.endpoint_url}/{bucket}/tenants/")
            fetched = httpx.get(location)
        assert fetched.status_code == 200
        assert fetched.content == pdf
        assert fetched.headers["content-type"] == PDF
        assert fetched.headers["content-disposition"] == content_disposition("inv 9.pdf")
        # A file posted for a document of a cancelled batch: its confirmation is refused, the
        # object removed; the landed one can still be downloaded.
        second = batch["documents"][1]
        method, post, sent = upload_request(second, b"%PDF-1.4 x", filename="b.pdf", size=10)
        assert httpx.request(method, post, **sent).status_code == 204
        ok(client.post(f"/v1/batches/{batch['id']}/cancel", headers=case.tenant.headers), 200)
        late = client.post(f"/v1/documents/{second['id']}/uploaded", headers=case.tenant.headers)
        assert (late.status_code, late.json()["code"]) == (409, "batch_cancelled")
        key = f"tenants/{case.tenant.tenant_id}/documents/{second['id']}/original"
        assert app.state.storage.head(key) is None
        again = client.get(url, headers=case.tenant.headers, follow_redirects=False)
        assert again.status_code == (200 if encrypted else 307)
