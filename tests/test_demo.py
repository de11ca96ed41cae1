"""The demo: its generated documents, `docflow demo` end to end (embedded server, real HTTP,
real engine and OCR), and `docflow serve --demo` as a real process that keeps serving."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from docflow.cli import app
from docflow.demo import INVOICES, RECEIPTS, DemoBatch, demo_files, next_steps, review_hint

runner = CliRunner()


def test_demo_documents_are_real_pdfs_and_scans_and_deterministic() -> None:
    files = demo_files(INVOICES) + demo_files(RECEIPTS)
    kinds = [f.content_type for f in files]
    assert kinds.count("application/pdf") == 5 and kinds.count("image/jpeg") == 2
    for file in files:
        magic = b"%PDF" if file.content_type == "application/pdf" else b"\xff\xd8\xff"
        assert file.data.startswith(magic), file.name
    assert [f.data for f in demo_files(INVOICES)] == [f.data for f in files[:4]]


def test_the_demo_ends_with_how_to_review_a_document_left_in_review() -> None:
    waiting = {
        "id": "doc_1",
        "status": "REVIEW_REQUIRED",
        "result": {
            "reasons": ["company: confidence 0.90 below 0.95"],
            "fields": {"company": {"value": None, "raw": "Summit Print"}},
        },
    }
    batch = DemoBatch("strict receipt", "bat_1", "/v1/batches/bat_1", 2)
    batch.documents = [{"id": "doc_0", "status": "SUCCEEDED"}, waiting]
    hint = "\n".join(review_hint([batch], "ten_1", "http://h"))
    assert "1 document(s) await review" in hint
    assert "docflow review show doc_1 --tenant ten_1" in hint
    assert "--field 'company=Summit Print'" in hint
    batch.documents = batch.documents[:1]
    assert review_hint([batch], "ten_1", "http://h") == [
        "no document needs review; the queue: docflow review list --tenant ten_1"
    ]


def test_the_demo_prints_its_tenant_and_the_command_line_next_steps() -> None:
    batches = [DemoBatch("invoice", "bat_1", "/v1/batches/bat_1", 2)]
    steps = "\n".join(next_steps(batches, "ten_1"))
    assert "demo tenant ten_1: operator commands take --tenant ten_1" in steps
    assert "docflow inspect batch bat_1 --tenant ten_1" in steps
    assert "docflow tenants show ten_1" in steps
    assert "docflow batches results bat_1 --output csv" in steps


@pytest.mark.slow
@pytest.mark.tesseract
def test_docflow_demo_runs_a_batch_per_workflow_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCFLOW_DATABASE_URL", raising=False)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "220")
    result = runner.invoke(app, ["demo", "--timeout", "120"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "invoice batch" in out and "receipt batch" in out
    for name in ("classic-0000.pdf", "modern-0003-scan.jpg", "card-0005-scan.jpg"):
        assert name in out
    assert re.search(r"total: \d+\.\d{2} \(\d\.\d\d, text_layer\)", out), out
    assert re.search(r"total: \d+\.\d{2} \(\d\.\d\d, (tesseract|ppocr)\)", out), out
    assert len(re.findall(r"batch bat_\w+: (SUCCEEDED|REVIEW_REQUIRED|PARTIALLY_FAILED)", out)) == 3
    assert "strict receipt batch" in out and "await review" in out
    assert "cold_start: thresholds" in out and "docflow workflows trust" in out
    assert re.search(r"docflow review approve doc_\w+ --tenant ten_\w+ --reviewer you", out), out
    tenant = re.findall(r"demo tenant (ten_\w+): ", out)
    assert tenant and f"docflow tenants show {tenant[0]}" in out, out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_line(
    log: Path, pattern: str, process: subprocess.Popen[bytes], timeout: float
) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in the output:\n{log.read_text(errors='replace')}")


def _signs_in_as_printed(log: Path, server: subprocess.Popen[bytes], port: int) -> None:
    """The console URL and demo credentials printed sign in to the console as printed."""
    url = _wait_for_line(log, r"the web console: (\S+)", server, timeout=30)
    assert url == f"http://127.0.0.1:{port}/console"
    credentials = _wait_for_line(log, r"sign in as (\S+ with the password \S+)", server, 30)
    email, _, password = credentials.partition(" with the password ")
    with httpx.Client(base_url=url) as browser:
        form = browser.get(f"{url}/sign-in").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token, form
        signed = browser.post(
            f"{url}/sign-in",
            data={"email": email, "password": password, "csrf_token": token.group(1)},
        )
        assert signed.status_code == 303, signed.text
        batches = browser.get(f"{url}/batches")
        assert batches.status_code == 200 and batches.text.count("/console/batches/bat_") == 3


@pytest.mark.slow
@pytest.mark.tesseract
def test_serve_demo_keeps_serving_and_refuses_a_second_process(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    env.update(DOCFLOW_HOME=str(tmp_path / "home"), DOCFLOW_PORT=str(port), COLUMNS="200")
    cli = [sys.executable, "-m", "docflow.cli"]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([*cli, "serve", "--demo"], env=env, stdout=out, stderr=out)
    try:
        token = _wait_for_line(log, r"Bearer (dfk_[^\s\"]+)", server, timeout=120)
        batches = httpx.get(
            f"http://127.0.0.1:{port}/v1/batches", headers={"Authorization": f"Bearer {token}"}
        ).json()["items"]
        assert len(batches) == 3  # invoices, receipts, receipts under a stricter review
        assert {b["status"] for b in batches} <= {"SUCCEEDED", "REVIEW_REQUIRED"}
        assert "docflow review approve doc_" in log.read_text(errors="replace")
        # The command line it suggests works as printed, through the API.
        printed = _wait_for_line(log, r"export (DOCFLOW_URL=\S+ DOCFLOW_API_KEY=\S+)", server, 30)
        remote = dict(pair.split("=", 1) for pair in printed.split())
        listed = subprocess.run(
            [*cli, "batches", "list", "--json"],
            env={**env, **remote},
            capture_output=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        assert sorted(b["id"] for b in json.loads(listed.stdout)) == sorted(
            b["id"] for b in batches
        )
        _signs_in_as_printed(log, server, port)
        second = subprocess.run(
            [*cli, "serve", "--port", str(_free_port())], env=env, capture_output=True, timeout=60
        )
        assert second.returncode == 1
        assert b"one process only" in second.stderr + second.stdout
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()  # never leave a server behind, even when it did not stop
            server.wait()
            raise
    assert server.returncode == 0, log.read_text(errors="replace")
