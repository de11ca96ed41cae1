"""`docflow serve` stopped by SIGTERM while a webhook delivery waits for its next attempt: it
exits within its shutdown timeout (the durable wait does not hold it for minutes after it gave
up its port and SQLite lock), and after a restart the delivery resumes and is delivered (a real
process, a real receiver on 127.0.0.1 that answers 500, then 200)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from docflow import db
from support.api_fixtures import ApiTenant, make_api_tenant, ok, workflow_body
from support.http_server import serving
from support.process_fixtures import answers, errors_in, free_port, stop, wait_for

SHUTDOWN_TIMEOUT_SECONDS = 2
# How much longer than its shutdown timeout the process may take to exit (start-up of the
# interpreter's exit, a loaded machine); far below the retry's wait.
MARGIN_SECONDS = 15
RETRY_SECONDS = 45


@dataclass
class Receiver:
    """Answers `status` to every POST and records the status it gave to each."""

    status: int = 500
    answered: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            with state.lock:
                status = state.status
                state.answered.append(status)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    with serving(Handler) as server:
        state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
        yield state


def _serve(home: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    env.update(
        DOCFLOW_HOME=str(home),
        DOCFLOW_PORT=str(port),
        DOCFLOW_ALLOW_PRIVATE_WEBHOOK_URLS="true",
        DOCFLOW_WEBHOOK_RETRY_SECONDS=f"[{RETRY_SECONDS}]",
        DOCFLOW_WEBHOOK_RETRY_JITTER="0",
        DOCFLOW_EVENTS_PUBLISH_INTERVAL_SECONDS="1",
        DOCFLOW_SHUTDOWN_TIMEOUT_SECONDS=str(SHUTDOWN_TIMEOUT_SECONDS),
    )
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", "serve"], env=env, stdout=out, stderr=out
        )
    wait_for(
        lambda: process.poll() is not None or answers(f"http://127.0.0.1:{port}/healthz"),
        timeout=120,
        what="docflow serve to answer",
    )
    assert process.poll() is None, log.read_text(errors="replace")[-3000:]
    return process


def _endpoint(api: httpx.Client, tenant: ApiTenant, url: str) -> str:
    project = ok(api.post("/v1/projects", json={"name": "Hooks"}, headers=tenant.headers), 201)
    body = {"url": url, "event_types": ["docflow.workflow.published.v1"]}
    webhooks = f"/v1/projects/{project['id']}/webhooks"
    endpoint = ok(api.post(webhooks, json=body, headers=tenant.headers), 201)
    # Publishing a workflow emits the event the endpoint receives.
    created = api.post(
        f"/v1/projects/{project['id']}/workflows", json=workflow_body(), headers=tenant.headers
    )
    ok(created, 201)
    return str(endpoint["id"])


@pytest.mark.slow
def test_serve_stops_within_its_timeout_while_a_retry_waits(
    tmp_path: Path, receiver: Receiver
) -> None:
    home, port, log = tmp_path / "home", free_port(), tmp_path / "serve.log"
    server = _serve(home, port, log)
    try:
        engine = db.make_engine(f"sqlite:///{home / 'docflow.db'}")
        try:
            tenant = make_api_tenant(db.make_session_factory(engine), "Hooks")
        finally:
            engine.dispose()
        api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        endpoint_id = _endpoint(api, tenant, receiver.url)
        wait_for(lambda: receiver.answered == [500], timeout=60, what="the first attempt")
        deliveries = f"/v1/webhooks/{endpoint_id}/deliveries"

        def attempted() -> bool:
            items = ok(api.get(deliveries, headers=tenant.headers), 200)["items"]
            return bool(items and items[0]["attempts"])

        wait_for(attempted, timeout=30, what="the failed attempt to be recorded")
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=SHUTDOWN_TIMEOUT_SECONDS + MARGIN_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail("serve still runs after its shutdown timeout while a retry waits")
    finally:
        stop(server, timeout=5)
    first_run = log.read_text(errors="replace")
    assert server.returncode == 0, first_run[-3000:]
    assert errors_in(first_run) == [], first_run[-3000:]

    receiver.status = 200
    restarted = _serve(home, port, log)
    try:
        wait_for(
            lambda: receiver.answered == [500, 200],
            timeout=RETRY_SECONDS + 60,
            what="the delivery to resume after the restart",
        )
        items = ok(api.get(deliveries, headers=tenant.headers), 200)["items"]
        assert [item["status"] for item in items] == ["DELIVERED"], items
    finally:
        stop(restarted, timeout=30)
