"""A tenant's catastrophic regular expression against a real `docflow serve`: `/healthz` keeps
answering at once while the document is processed, and the document ends in moments.

On Python's re, `(a+)+$` over 29 a's and a "!" held the interpreter lock for minutes: the
server stopped answering and heartbeating, and other workers would have declared it dead and run
the same document again.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from support import catastrophic
from support.process_fixtures import stop, wait_for

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


class HealthProbe(threading.Thread):
    """Calls `/healthz` back to back and records how long each answer took."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base, self.latencies, self.failures = base, list[float](), list[str]()
        self.done = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while not self.done.is_set():
                started = time.perf_counter()
                try:
                    status = client.get("/healthz").status_code
                    if status != 200:
                        self.failures.append(f"status {status}")
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.latencies.append(time.perf_counter() - started)
                time.sleep(0.02)


def test_a_catastrophic_pattern_neither_freezes_the_server_nor_holds_the_document(
    tmp_path: Path,
) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    env.update(DOCFLOW_HOME=str(tmp_path / "home"), DOCFLOW_PORT=str(port), COLUMNS="200")
    log = tmp_path / "serve.log"
    with log.open("ab") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", "serve"], env=env, stdout=out, stderr=out
        )
    try:
        wait_for(lambda: _healthy(base), timeout=120, what=f"docflow serve to answer ({log})")
        created = subprocess.run(
            [sys.executable, "-m", "docflow.cli", "tenants", "create", "Catastrophic"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        token = re.search(r"(dfk_\S+)", created)
        assert token is not None, created
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token.group(1)}"})
        project = api.post("/v1/projects", json={"name": "P"}).json()
        workflow = api.post(
            f"/v1/projects/{project['id']}/workflows", json=catastrophic.workflow_body()
        )
        assert workflow.status_code == 201, workflow.text
        pdf = catastrophic.pdf()
        batch = api.post(
            "/v1/batches",
            json={
                "project_id": project["id"],
                "workflow_id": workflow.json()["id"],
                "documents": [
                    {"name": "evil.pdf", "content_type": "application/pdf", "size": len(pdf)}
                ],
            },
        ).json()
        probe = HealthProbe(base)
        probe.start()
        wait_for(lambda: len(probe.latencies) >= 5, timeout=30, what="the first health probes")
        started = time.monotonic()
        put = httpx.put(batch["documents"][0]["upload_url"], content=pdf)
        assert put.status_code == 200, put.text

        def finished() -> bool:
            return api.get(f"/v1/batches/{batch['id']}").json()["status"] not in (
                "CREATED",
                "PROCESSING",
            )

        wait_for(finished, timeout=60, what=f"the batch to finish ({log})", interval=0.05)
        elapsed = time.monotonic() - started
        time.sleep(0.5)  # a few more probes after the document
        probe.done.set()
        probe.join(timeout=60)
        documents = api.get(f"/v1/batches/{batch['id']}/documents").json()["items"]
    finally:
        stop(server, timeout=30)
    assert elapsed < 10, elapsed  # queue polling included; minutes on Python's re
    assert [d["status"] for d in documents] == ["FAILED"]
    assert probe.failures == [] and len(probe.latencies) >= 10
    # Generous for a loaded 2-core machine; the freeze it guards against lasted minutes.
    assert max(probe.latencies) < 2.0, sorted(probe.latencies)[-5:]
