"""A stored file that fails its seal's check is never served as if whole, on a local folder
and on S3, through a real HTTP server: damage in the first chunk answers a problem+json 500
before any byte is sent; damage further in cuts the download short (the client sees an
incomplete body, never a clean end). Both are counted in
`docflow_stored_file_integrity_failures_total` by where."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from docflow import db
from docflow.client.remote import upload_request
from docflow.documents.models import Document
from docflow.main import create_app
from docflow.storage.base import Storage
from docflow.storage.sealed import HEADER_SIZE, SEAL_CHUNK, TAG, unwrap_storage
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import DbosEnv, Setup, create_batch, dbos_env, upload_path  # noqa: F401
from support.s3_server import S3Server, s3_server  # noqa: F401

PDF = "application/pdf"
# Several seal chunks and more than one read of the download's (1 MiB).
ORIGINAL = b"%PDF-1.4\n" + os.urandom(3 * 1024 * 1024)


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """`app` behind a real uvicorn on 127.0.0.1 (a port of its own) until the block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="critical"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _failures(where: str) -> float:
    value = REGISTRY.get_sample_value(
        "docflow_stored_file_integrity_failures_total", {"where": where}
    )
    return value or 0.0


def _landed(case: Setup, client: TestClient, s3: bool) -> tuple[str, str]:
    """A document whose file has landed: its id and storage key."""
    batch = create_batch(case, [("big.pdf", PDF, len(ORIGINAL)), ("later.pdf", PDF, 10)])
    first = batch["documents"][0]
    if s3:
        method, url, sent = upload_request(first, ORIGINAL, filename="big.pdf", size=len(ORIGINAL))
        assert httpx.request(method, url, **sent).status_code == 204
        ok(client.post(f"/v1/documents/{first['id']}/uploaded", headers=case.tenant.headers), 200)
    else:
        ok(client.put(upload_path(first["upload_url"]), content=ORIGINAL), 200)
    with db.make_session_factory(case.env.engine)() as session:
        db.bind_tenant(session, case.tenant.tenant_id)
        document = session.get(Document, (case.tenant.tenant_id, first["id"]))
        assert document is not None and document.storage_key is not None
        return first["id"], document.storage_key


def _flip(raw: Storage, key: str, at: int) -> None:
    stored = bytearray(raw.read_bytes(key, max_bytes=2 * len(ORIGINAL)))
    stored[at] ^= 1
    raw.write_bytes(key, bytes(stored))


@pytest.fixture(params=["local", "s3"])
def storage_case(
    request: pytest.FixtureRequest,
    dbos_env: DbosEnv,  # noqa: F811
) -> Iterator[tuple[Setup, TestClient]]:
    """A tenant with a project and workflow, on an app over a local folder or a bucket (files
    sealed), with a TestClient on it."""
    app = dbos_env.client.app
    if request.param == "s3":
        server: S3Server = request.getfixturevalue("s3_server")
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        bucket = "integrity"
        url = f"s3://{bucket}?endpoint_url={server.endpoint_url}"
        app = create_app(
            dbos_env.settings.model_copy(update={"storage_url": url}), engine=dbos_env.engine
        )
        raw = unwrap_storage(app.state.storage)
        raw.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    with TestClient(app) as client:  # type: ignore[arg-type]
        tenant = dbos_env.tenant()
        project = post_project(client, tenant)
        workflow = post_workflow(client, tenant, project["id"])
        env = replace(dbos_env, client=client)
        yield Setup(env, tenant, project["id"], workflow["id"]), client


def test_a_damaged_first_chunk_answers_500_before_any_byte(
    storage_case: tuple[Setup, TestClient], request: pytest.FixtureRequest
) -> None:
    case, client = storage_case
    s3 = "s3" in request.node.callspec.id
    document_id, key = _landed(case, client, s3)
    raw = unwrap_storage(client.app.state.storage)  # type: ignore[attr-defined]
    with serving(client.app) as base:  # type: ignore[arg-type]
        url = f"{base}/v1/documents/{document_id}/file"
        whole = httpx.get(url, headers=case.tenant.headers, timeout=30)
        assert whole.status_code == 200 and whole.content == ORIGINAL
        _flip(raw, key, HEADER_SIZE + 10)
        before = _failures("open")
        answer = httpx.get(url, headers=case.tenant.headers, timeout=30)
    assert answer.status_code == 500
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["code"] == "sealed_object_invalid"
    assert _failures("open") == before + 1


def test_a_damaged_later_chunk_cuts_the_download_short(
    storage_case: tuple[Setup, TestClient], request: pytest.FixtureRequest
) -> None:
    case, client = storage_case
    s3 = "s3" in request.node.callspec.id
    document_id, key = _landed(case, client, s3)
    raw = unwrap_storage(client.app.state.storage)  # type: ignore[attr-defined]
    # A chunk past the first read of the download: some bytes are sent before it is found.
    _flip(raw, key, HEADER_SIZE + 20 * (SEAL_CHUNK + TAG) + 10)
    before = _failures("stream")
    received = bytearray()
    with serving(client.app) as base:  # type: ignore[arg-type]
        url = f"{base}/v1/documents/{document_id}/file"
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream("GET", url, headers=case.tenant.headers, timeout=30) as answer,
        ):
            assert answer.status_code == 200
            for chunk in answer.iter_bytes():
                received += chunk
    assert 0 < len(received) < len(ORIGINAL)
    assert bytes(received) == ORIGINAL[: len(received)]
    assert _failures("stream") == before + 1
