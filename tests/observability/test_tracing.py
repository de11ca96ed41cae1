"""Traces of a real `docflow serve` exported over OTLP/HTTP to a real receiver: one trace runs
from the request that creates a batch through the batch's execution, every document's
workflow and steps, and the webhook delivery of its events; log lines carry the trace and the
request id; nothing is exported without an endpoint."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest

from docflow import db
from support.api_fixtures import make_api_tenant, ok, workflow_body
from support.dbos_fixtures import invoice_pdf
from support.http_server import serving
from support.otlp_receiver import Received, otlp_receiver
from support.process_fixtures import served, wait_for

PDF = "application/pdf"


@pytest.fixture
def webhook_receiver() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    with serving(Handler) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks"


def test_one_trace_from_the_batch_request_to_the_webhook_delivery(
    tmp_path: Path, webhook_receiver: str
) -> None:
    with otlp_receiver() as received:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": received.url,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_SERVICE_NAME": "docflow-test",
            "DOCFLOW_ALLOW_PRIVATE_WEBHOOK_URLS": "true",
        }
        with served(tmp_path / "home", tmp_path / "serve.log", env) as running:
            engine = db.make_engine(f"sqlite:///{running.home / 'docflow.db'}")
            try:
                tenant = make_api_tenant(db.make_write_session_factory(engine), "Traced")
            finally:
                engine.dispose()
            trace_id, request_id = run_batch(running.base_url, tenant.token, webhook_receiver)
            wait_for(
                lambda: delivered(received, trace_id),
                timeout=60,
                what="the webhook delivery's span in the batch's trace",
            )
            output = running.output()
    spans = [s for s in received.snapshot() if s.trace_id == trace_id]
    names = [s.name for s in spans]
    assert "POST /v1/batches" in names
    assert {"docflow.batch", "batch.begin"} <= set(names), names
    assert names.count("document.extract") == 2
    assert names.count("document.persist") == 2
    assert all(s.service == "docflow-test" for s in spans)
    # Every span but the request's has its parent in the trace: one tree, not fragments.
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id not in ids]
    assert [r.name for r in roots] == ["POST /v1/batches"]
    # The request's log lines name its request id and its trace.
    created = [line for line in output.splitlines() if '"batch.created"' in line]
    assert created and f'"trace_id": "{trace_id}"' in created[0]
    assert f'"request_id": "{request_id}"' in created[0]


def run_batch(base_url: str, token: str, hook_url: str) -> tuple[str, str]:
    """A project, the invoice workflow, a webhook endpoint and a batch of two text PDFs; the
    trace id of the batch's creation (from the server's answer) and its request id."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as http:
        project = ok(http.post("/v1/projects", json={"name": "Traced"}), 201)
        body = workflow_body()  # reads what invoice_pdf prints
        workflow = ok(http.post(f"/v1/projects/{project['id']}/workflows", json=body), 201)
        hook = {"url": hook_url, "event_types": ["docflow.document.completed.v1"]}
        ok(http.post(f"/v1/projects/{project['id']}/webhooks", json=hook), 201)
        files = [invoice_pdf("INV-41", "41.00"), invoice_pdf("INV-42", "42.00")]
        traceparent = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
        answer = http.post(
            "/v1/batches",
            json={
                "project_id": project["id"],
                "workflow_id": workflow["id"],
                "documents": [
                    {"name": f"t{i}.pdf", "content_type": PDF, "size": len(f)}
                    for i, f in enumerate(files)
                ],
            },
            headers={"traceparent": traceparent, "X-Request-ID": "req-traced-1"},
        )
        batch = ok(answer, 202)
        assert answer.headers["X-Request-ID"] == "req-traced-1"
        for declared, data in zip(batch["documents"], files, strict=True):
            upload = declared["upload"]
            response = httpx.put(upload["url"], content=data, headers=upload["headers"])
            assert response.status_code == 200, response.text
        deadline = time.monotonic() + 60
        while ok(http.get(f"/v1/batches/{batch['id']}"), 200)["status"] in (
            "CREATED",
            "PROCESSING",
        ):
            assert time.monotonic() < deadline
            time.sleep(0.2)
    return "ab" * 16, "req-traced-1"


def delivered(received: Received, trace_id: str) -> bool:
    names = [s.name for s in received.snapshot() if s.trace_id == trace_id]
    return names.count("document.persist") == 2 and any("webhook" in n for n in names)


def test_no_endpoint_no_traces(tmp_path: Path) -> None:
    with otlp_receiver() as received, served(tmp_path / "home", tmp_path / "serve.log") as running:
        assert httpx.get(f"{running.base_url}/healthz").status_code == 200
        answer = httpx.get(f"{running.base_url}/healthz", headers={"X-Request-ID": "bad id!"})
        assert len(answer.headers["X-Request-ID"]) == 16  # a fresh one, not the client's
        time.sleep(0.5)
    assert received.snapshot() == []
