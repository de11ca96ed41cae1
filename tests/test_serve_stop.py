"""`docflow serve` stopped by SIGTERM in the middle of a batch: it exits promptly and logs no
error, and the batch finishes after a restart with every document counted once (a real
process, real HTTP)."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from docflow.corpus.generate import LAYOUTS, make_document
from support.process_fixtures import errors_in

DOCUMENTS = 150
T = TypeVar("T")


def invoice(k: int) -> bytes:
    """The k-th generated text invoice (the corpus cycles through 4 invoice layouts and
    3 receipt layouts)."""
    return make_document(2026, (k // 4) * len(LAYOUTS) + k % 4).pdf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", *args], env=env, stdout=out, stderr=out
        )


def _wait(
    condition: Callable[[], T | None],
    timeout: float,
    what: str,
    process: subprocess.Popen[bytes],
    log: Path,
) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"{what}; server output:\n{log.read_text(errors='replace')[-3000:]}")


def _batch_row(database: Path, batch_id: str) -> tuple[str, int, int, int]:
    with sqlite3.connect(database) as conn:
        row = conn.execute(
            "SELECT status, succeeded_count, review_count, failed_count FROM batches WHERE id = ?",
            (batch_id,),
        ).fetchone()
    return (str(row[0]), int(row[1]), int(row[2]), int(row[3]))


def _stop(server: subprocess.Popen[bytes], timeout: float) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        raise


@pytest.mark.slow
def test_serve_stops_mid_batch_and_a_restart_finishes_it(tmp_path: Path) -> None:
    home, port = tmp_path / "home", _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    env.update(DOCFLOW_HOME=str(home), DOCFLOW_PORT=str(port), COLUMNS="200")
    log = tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    server = _start(["serve", "--demo"], env, log)
    try:
        token = _wait(
            lambda: re.search(r"Bearer (dfk_[^\s\"]+)", log.read_text(errors="replace")),
            120,
            "the demo did not print its API key",
            server,
            log,
        ).group(1)
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})
        project = api.get("/v1/projects").json()["items"][0]
        workflows = api.get(f"/v1/projects/{project['id']}/workflows").json()["items"]
        workflow = next(w for w in workflows if w["name"] == "invoice")
        pdfs = [invoice(i) for i in range(DOCUMENTS)]
        created = api.post(
            "/v1/batches",
            json={
                "project_id": project["id"],
                "workflow_id": workflow["id"],
                "documents": [
                    {"name": f"d{i}.pdf", "content_type": "application/pdf", "size": len(pdf)}
                    for i, pdf in enumerate(pdfs)
                ],
            },
        )
        assert created.status_code == 202, created.text
        batch = created.json()
        for target, pdf in zip(batch["documents"], pdfs, strict=True):
            put = httpx.put(
                target["upload_url"], content=pdf, headers={"Content-Type": "application/pdf"}
            )
            assert put.status_code == 200, put.text
        database = home / "docflow.db"
        _wait(
            lambda: sum(_batch_row(database, batch["id"])[1:]) >= 5 or None,
            120,
            "no document finished",
            server,
            log,
        )
    finally:
        _stop(server, timeout=30)
    first_run = log.read_text(errors="replace")
    assert server.returncode == 0, first_run[-3000:]
    # Stopped with documents in flight, and yet no error logged (they resume after the restart).
    assert errors_in(first_run) == [], first_run[-4000:]
    status, *counts = _batch_row(database, batch["id"])
    assert status == "PROCESSING" and sum(counts) < DOCUMENTS  # stopped mid-batch

    restarted = _start(["serve"], env, log)
    try:
        _wait(
            lambda: _batch_row(database, batch["id"])[0] not in ("CREATED", "PROCESSING") or None,
            180,
            "the batch did not finish after the restart",
            restarted,
            log,
        )
    finally:
        _stop(restarted, timeout=30)
    status, *counts = _batch_row(database, batch["id"])
    with sqlite3.connect(database) as conn:
        statuses = dict(
            conn.execute(
                "SELECT status, count(*) FROM documents WHERE batch_id = ? GROUP BY status",
                (batch["id"],),
            ).fetchall()
        )
    # Every document ended once and was counted once: the counters match the rows.
    assert sum(statuses.values()) == DOCUMENTS
    assert set(statuses) <= {"SUCCEEDED", "REVIEW_REQUIRED", "FAILED"}
    assert counts == [statuses.get(s, 0) for s in ("SUCCEEDED", "REVIEW_REQUIRED", "FAILED")]
    assert statuses.get("SUCCEEDED", 0) >= DOCUMENTS * 0.9, statuses
