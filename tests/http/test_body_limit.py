"""Request bodies are bounded before anything reads them: 413 problem+json before authentication,
for sized and chunked bodies alike, while uploads keep their own limit. Over a real socket to a
real `docflow serve` process, whose memory must not grow with what a client sends."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from docflow import db
from docflow.config import Settings
from docflow.main import create_app
from support.api_fixtures import (
    ApiTenant,
    documents_body,
    make_api_tenant,
    ok,
    post_project,
    workflow_body,
)
from support.process_fixtures import Served, served

MIB = 1024 * 1024
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("serve")
    with served(home / "home", home / "serve.log") as running:
        yield running


@pytest.fixture(scope="module")
def tenant(server: Served) -> ApiTenant:
    engine = db.make_engine(f"sqlite:///{server.home / 'docflow.db'}")
    try:
        return make_api_tenant(db.make_write_session_factory(engine), "Body limits")
    finally:
        engine.dispose()


def _reset_peak_memory(pid: int) -> int:
    """Reset the process's peak resident memory (Linux `clear_refs`); its resident bytes now."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return _memory(pid)["VmRSS"]


def _memory(pid: int) -> dict[str, int]:
    """VmRSS (resident now) and VmHWM (peak resident since the last reset), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in status if line.startswith(("VmRSS", "VmHWM")))
    return {name: int(value.split()[0]) * 1024 for name, value in fields.items()}


def _send_chunked(base_url: str, path: str, total: int) -> tuple[int, bytes]:
    """POST a JSON body of about `total` bytes (one long string) to `path`, chunked, without an
    API key, stopping as soon as the server answers or closes; the bytes sent and the answer."""
    host, port = base_url.removeprefix("http://").split(":")
    chunk = b"x" * (64 * 1024)
    sent = 0
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            'Transfer-Encoding: chunked\r\n\r\n9\r\n{"name":"\r\n'.encode()
        )
        try:
            while sent < total and not select.select([sock], [], [], 0)[0]:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            if sent >= total:
                sock.sendall(b'2\r\n"}\r\n0\r\n\r\n')
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: read what it said
        answer = b""
        try:
            while data := sock.recv(65536):
                answer += data
        except ConnectionResetError:
            pass
    return sent, answer


def _problem(answer: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = {
        name.lower(): value.strip()
        for name, _, value in (line.partition(":") for line in header_lines)
    }
    return int(status_line.split()[1]), headers, json.loads(body)


@pytest.mark.slow
def test_a_huge_chunked_body_without_a_key_is_refused_early_and_never_held(
    server: Served,
) -> None:
    before = _reset_peak_memory(server.process.pid)
    sent, answer = _send_chunked(server.base_url, "/v1/projects", 300 * MIB)
    grown = _memory(server.process.pid)["VmHWM"] - before
    status, headers, problem = _problem(answer)
    assert status == 413, answer[:500]
    assert headers["content-type"] == PROBLEM
    assert headers["connection"] == "close"
    assert problem["code"] == "body_too_large"
    assert problem["max_bytes"] == MIB
    assert problem["instance"] == "/v1/projects"
    # Refused once the limit passed: what was sent is the limit plus what the sockets buffer.
    assert sent < 64 * MIB
    assert grown < 50 * MIB, f"the server grew by {grown / MIB:.0f} MiB"


@pytest.mark.slow
def test_the_server_limits_sized_bodies_and_keeps_serving(
    server: Served, tenant: ApiTenant
) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        refused = client.post(
            "/v1/projects", content=b" " * (MIB + 1), headers={"Content-Type": "application/json"}
        )
        assert refused.status_code == 413
        assert refused.json()["code"] == "body_too_large"
        created = client.post("/v1/projects", json={"name": "Under"}, headers=tenant.headers)
        assert created.status_code == 201, created.text


@pytest.fixture(scope="module")
def client(api_settings: Settings, engine: Engine) -> Iterator[TestClient]:
    """The app with small limits (the JSON limit 2 KiB, workflow definitions 8 KiB)."""
    settings = api_settings.model_copy(
        update={"max_json_body_bytes": 2048, "max_workflow_body_bytes": 8192}
    )
    with TestClient(create_app(settings, engine=engine)) as test_client:
        yield test_client


def test_a_declared_size_past_the_limit_is_413_before_authentication(client: TestClient) -> None:
    response = client.post(
        "/v1/projects",
        content=b"{" + b" " * 2048 + b"}",
        headers={"Content-Type": "application/json"},
    )
    problem = ok(response, 413)
    assert response.headers["content-type"] == PROBLEM
    assert problem["code"] == "body_too_large" and problem["max_bytes"] == 2048
    assert problem["detail"] == "the request body is larger than the limit of 2048 bytes"


def test_a_streamed_body_is_counted(client: TestClient, tenant_key_a: ApiTenant) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"name": "'
        yield b"x" * 4096
        yield b'"}'

    response = client.post("/v1/projects", content=chunks(), headers=tenant_key_a.headers)
    assert ok(response, 413)["code"] == "body_too_large"


def test_bodies_under_the_limit_are_unaffected(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project = post_project(client, tenant_key_a, "Under the limit")
    assert project["name"] == "Under the limit"


def test_workflow_definitions_have_their_own_limit(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    project = post_project(client, tenant_key_a, "Long forms")
    # 90 labels (within the definition's 100 per locator), about 3.5 KiB: past the JSON limit
    labels = [f"Label number {i} of the long form" for i in range(90)]
    body = workflow_body("long")
    body["fields"][0]["locators"] = [{"kind": "label", "labels": labels}]
    path = f"/v1/projects/{project['id']}/workflows"
    created = ok(client.post(path, json=body, headers=tenant_key_a.headers), 201)
    updated = client.put(f"/v1/workflows/{created['id']}", json=body, headers=tenant_key_a.headers)
    assert ok(updated, 200)["version"] == 2
    body["fields"][0]["locators"][0]["labels"] = labels * 4  # about 14 KiB
    too_long = client.post(path, json=body, headers=tenant_key_a.headers)
    assert ok(too_long, 413)["max_bytes"] == 8192
    batch = {"project_id": project["id"], "workflow_id": created["id"]}
    many = client.post(
        "/v1/batches", json={**batch, "documents": documents_body(40)}, headers=tenant_key_a.headers
    )
    assert ok(many, 413)["max_bytes"] == 2048  # the workflow limit is for workflows only


@pytest.mark.slow
def test_uploads_keep_their_own_limit(server: Served, tenant: ApiTenant) -> None:
    size = 3 * MIB  # past the JSON limit, within the document's declared size
    with httpx.Client(base_url=server.base_url, headers=tenant.headers, timeout=30) as client:
        project = ok(client.post("/v1/projects", json={"name": "Big files"}), 201)
        workflow = ok(
            client.post(f"/v1/projects/{project['id']}/workflows", json=workflow_body()), 201
        )
        batch = {
            "project_id": project["id"],
            "workflow_id": workflow["id"],
            "documents": documents_body(1, size=size),
        }
        document = ok(client.post("/v1/batches", json=batch), 202)["documents"][0]
    pdf = {"Content-Type": "application/pdf"}
    too_big = httpx.put(document["upload_url"], content=b"%PDF" + b" " * size, headers=pdf)
    assert ok(too_big, 413)["code"] == "file_too_large"  # the upload's own limit
    landed = httpx.put(document["upload_url"], content=b"%PDF" + b" " * (size - 4), headers=pdf)
    assert ok(landed, 200)["id"] == document["id"]
