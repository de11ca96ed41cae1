"""The remote commands' client against a real HTTP peer that answers what a server may answer
but rarely does on cue: a busy 503 with Retry-After, a 500, a batch that does not end, an
upload refused. And where the commands find their server and key."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from docflow.cli import app
from docflow.client import config
from support.http_server import serving

runner = CliRunner()
KEY = "dfk_stubstubstub_secretsecretsecret"
BATCH = {
    "id": "bat_01m8mcpp5a2n88kad5ph27tqy5",
    "project_id": "prj_01m8mcpebw86japvg0dxg32avq",
    "workflow_id": "wfl_01m8mcpfvp1sr8az8g3x67bcjp",
    "workflow_version": 1,
    "status": "PROCESSING",
    "document_count": 1,
    "uploaded_count": 1,
    "succeeded_count": 0,
    "review_count": 0,
    "failed_count": 0,
    "created_at": "2026-12-01T10:00:00Z",
    "completed_at": None,
}


class Stub(BaseHTTPRequestHandler):
    """Answers from `script`: (method, path) -> a list of (status, body, headers), the last one
    repeated; records each request."""

    script: ClassVar[dict[tuple[str, str], list[tuple[int, Any, dict[str, str]]]]] = {}
    seen: ClassVar[list[tuple[str, str, str | None]]] = []
    lock = threading.Lock()

    def log_message(self, *_: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        path = self.path.split("?")[0]
        with self.lock:
            self.seen.append((self.command, path, self.headers.get("Authorization")))
            answers = self.script.get((self.command, path))
            if not answers:
                status, body, headers = 404, {"detail": "no such resource", "code": "not_found"}, {}
            else:
                status, body, headers = answers.pop(0) if len(answers) > 1 else answers[0]
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        kind = "application/problem+json" if status >= 400 else "application/json"
        kind = "application/pdf" if isinstance(body, bytes) else kind
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = _answer


@pytest.fixture
def stub() -> Iterator[str]:
    Stub.script, Stub.seen = {}, []
    with serving(Stub) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


def run(url: str, *args: str, code: int) -> Any:
    env = {"DOCFLOW_URL": url, "DOCFLOW_API_KEY": KEY, "COLUMNS": "200"}
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert KEY not in result.output and "Traceback" not in result.output
    return result


def problem(status: int, detail: str, code: str, field: str | None = None) -> dict[str, Any]:
    errors = [{"field": field, "message": detail}] if field else []
    return {"status": status, "detail": detail, "code": code, "errors": errors}


def test_a_busy_server_is_asked_again_after_its_retry_after(stub: str) -> None:
    path = f"/v1/batches/{BATCH['id']}"
    Stub.script[("GET", path)] = [
        (503, problem(503, "busy", "service_unavailable"), {"Retry-After": "0"}),
        (503, problem(503, "busy", "service_unavailable"), {"Retry-After": "0"}),
        (200, BATCH, {}),
    ]
    result = run(stub, "batches", "show", BATCH["id"], "--json", code=0)
    assert json.loads(result.stdout)["id"] == BATCH["id"]
    assert Stub.seen == [("GET", path, f"Bearer {KEY}")] * 3


def test_a_server_error_is_exit_2_and_a_refusal_exit_1(stub: str) -> None:
    Stub.script[("GET", "/v1/batches")] = [(500, problem(500, "it broke", "internal_error"), {})]
    result = run(stub, "batches", "list", code=2)
    assert result.stderr == "error: it broke (internal_error)\n" and result.stdout == ""
    Stub.script[("GET", "/v1/batches")] = [
        (422, problem(422, "limit: too large", "invalid_input", "limit"), {})
    ]
    result = run(stub, "batches", "list", code=1)
    assert result.stderr == "error: limit: too large (invalid_input, field limit)\n"


def _batch_with_upload(stub: str, path: Path) -> dict[str, Any]:
    url = f"{stub}/v1/uploads/v1.token"
    document = {
        "id": "doc_01m8mcpp5a2n88kad5ph27tqy6",
        "name": path.name,
        "content_type": "application/pdf",
        "declared_size": path.stat().st_size,
        "upload_url": url,
        "upload": {"url": url, "method": "PUT", "headers": {"Content-Type": "application/pdf"}},
    }
    return {**BATCH, "status": "CREATED", "documents": [document]}


def test_wait_gives_up_at_its_timeout_with_exit_3(stub: str, tmp_path: Path) -> None:
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(b"%PDF-1.4 stub")
    Stub.script[("POST", "/v1/batches")] = [(202, _batch_with_upload(stub, pdf), {})]
    Stub.script[("PUT", "/v1/uploads/v1.token")] = [(200, {"status": "UPLOADED"}, {})]
    Stub.script[("GET", f"/v1/batches/{BATCH['id']}")] = [(200, BATCH, {})]
    args = ["batches", "submit", str(pdf), "--project", "prj_x", "--workflow", "wfl_x"]
    result = run(stub, *args, "--wait", "--timeout", "1", code=3)
    assert f"batch {BATCH['id']} is still PROCESSING after 1 s" in result.stderr
    assert result.stdout == ""
    upload = [seen for seen in Stub.seen if seen[0] == "PUT"]
    assert upload == [("PUT", "/v1/uploads/v1.token", None)]  # the URL is the credential


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ("SUCCEEDED", 0),
        ("REVIEW_REQUIRED", 0),
        ("FAILED", 4),
        ("PARTIALLY_FAILED", 5),
        ("CANCELLED", 6),
    ],
)
def test_wait_exits_with_how_the_batch_ended(
    stub: str, tmp_path: Path, status: str, code: int
) -> None:
    # A FAILED batch exited 0, and a CANCELLED one was waited for until the timeout.
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(b"%PDF-1.4 stub")
    Stub.script[("POST", "/v1/batches")] = [(202, _batch_with_upload(stub, pdf), {})]
    Stub.script[("PUT", "/v1/uploads/v1.token")] = [(200, {"status": "UPLOADED"}, {})]
    ended = {**BATCH, "status": status, "completed_at": "2026-12-01T10:00:09Z"}
    Stub.script[("GET", f"/v1/batches/{BATCH['id']}")] = [(200, ended, {})]
    Stub.script[("GET", f"/v1/batches/{BATCH['id']}/documents")] = [
        (200, {"items": [], "next_cursor": None}, {})
    ]
    args = ["batches", "submit", str(pdf), "--project", "prj_x", "--workflow", "wfl_x"]
    result = run(stub, *args, "--wait", "--timeout", "30", "--json", code=code)
    assert json.loads(result.stdout)["batch"]["status"] == status


def test_a_refused_upload_names_the_file_and_exits_1(stub: str, tmp_path: Path) -> None:
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(b"%PDF-1.4 stub")
    Stub.script[("POST", "/v1/batches")] = [(202, _batch_with_upload(stub, pdf), {})]
    refused = problem(403, "the upload URL has expired", "upload_url_expired")
    Stub.script[("PUT", "/v1/uploads/v1.token")] = [(403, refused, {})]
    args = ["batches", "submit", str(pdf), "--project", "prj_x", "--workflow", "wfl_x"]
    result = run(stub, *args, code=1)
    assert "upload failed:" in result.stderr and "a.pdf" in result.stderr
    assert "error: the upload URL has expired (upload_url_expired)" in result.stderr
    assert f"batch {BATCH['id']} waits for the files not uploaded" in result.stderr


def test_a_refused_declaration_names_the_file_at_fault(stub: str, tmp_path: Path) -> None:
    files = [tmp_path / "a.pdf", tmp_path / "b.pdf"]
    for file in files:
        file.write_bytes(b"%PDF-1.4 stub")
    too_big = problem(413, "larger than 52428800 bytes", "limit_exceeded", "documents.1.size")
    Stub.script[("POST", "/v1/batches")] = [(413, too_big, {})]
    args = ["batches", "submit", *map(str, files), "--project", "p", "--workflow", "w"]
    result = run(stub, *args, code=1)
    assert result.stderr == (
        f"error: {files[1]}: larger than 52428800 bytes (limit_exceeded, field documents.1.size)\n"
    )


def test_submit_refuses_a_missing_file_before_any_request(stub: str, tmp_path: Path) -> None:
    args = ["batches", "submit", str(tmp_path / "none.pdf"), "--project", "p", "--workflow", "w"]
    result = run(stub, *args, code=1)
    assert "no such file or folder" in result.stderr and Stub.seen == []


def test_options_then_environment_then_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "cli.toml"
    file.write_text(
        'default_profile = "a"\n'
        '[profiles.a]\nurl = "http://a.test"\napi_key = "dfk_a"\n'
        '[profiles.b]\nurl = "http://b.test"\napi_key = "dfk_b"\n'
    )
    for name in ("DOCFLOW_URL", "DOCFLOW_API_KEY", "DOCFLOW_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCFLOW_CONFIG", str(file))
    assert config.resolve(None, None, None) == config.Remote("http://a.test", "dfk_a", "a")
    assert config.resolve(None, None, "b").url == "http://b.test"
    monkeypatch.setenv("DOCFLOW_PROFILE", "b")
    assert config.resolve(None, None, None).api_key == "dfk_b"
    monkeypatch.setenv("DOCFLOW_URL", "http://env.test")
    found = config.resolve(None, None, None)
    assert (found.url, found.api_key) == ("http://env.test", "dfk_b")
    assert config.resolve("https://opt.test", "dfk_o", None).api_key == "dfk_o"
    assert "dfk_" not in repr(found)
    file.write_text("profiles = [")
    with pytest.raises(config.ConfigError, match="cannot read the configuration file"):
        config.resolve(None, None, None)
    monkeypatch.setenv("DOCFLOW_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("DOCFLOW_PROFILE")
    with pytest.raises(config.ConfigError, match="no API key"):
        config.resolve(None, None, None)


def test_download_streams_the_original_into_a_folder_and_never_replaces_a_file(
    stub: str, tmp_path: Path
) -> None:
    """Against the contract of `GET /v1/documents/{id}/file` (the original bytes)."""
    document_id = "doc_01m8mcpp5a2n88kad5ph27tqy6"
    original = b"%PDF-1.4 " + bytes(range(256)) * 300
    document = {"id": document_id, "name": "../in voice.pdf", "status": "SUCCEEDED"}
    Stub.script[("GET", f"/v1/documents/{document_id}")] = [(200, document, {})]
    Stub.script[("GET", f"/v1/documents/{document_id}/file")] = [(200, original, {})]
    run(stub, "documents", "download", document_id, "--out", str(tmp_path), code=0)
    assert (tmp_path / "in voice.pdf").read_bytes() == original  # the name's folders dropped
    again = run(stub, "documents", "download", document_id, "--out", str(tmp_path), code=1)
    assert "exists; pass --force" in again.stderr
    run(stub, "documents", "download", document_id, "--out", str(tmp_path), "--force", code=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in voice.pdf"]  # no partial file
    gone = problem(404, "document not found", "not_found", "document_id")
    Stub.script[("GET", f"/v1/documents/{document_id}/file")] = [(404, gone, {})]
    missing = run(
        stub, "documents", "download", document_id, "--out", str(tmp_path / "x.pdf"), code=1
    )
    assert missing.stderr == "error: document not found (not_found, field document_id)\n"
    assert not (tmp_path / "x.pdf").exists()


def test_an_id_stays_one_segment_of_the_path(stub: str) -> None:
    result = run(stub, "batches", "show", "../projects?limit=1", code=1)
    assert Stub.seen == [("GET", "/v1/batches/..%2Fprojects%3Flimit%3D1", f"Bearer {KEY}")]
    assert result.stderr == "error: no such resource (not_found)\n"
