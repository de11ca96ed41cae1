"""No exported span holds a credential: a real `docflow serve` exporting over OTLP/HTTP to a
real receiver shows upload URLs as `/v1/uploads/{token}` in every span, and the exporter
wrapper redacts attributes, events (an exception's message) and status whatever made them."""

from __future__ import annotations

from pathlib import Path

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from docflow import db
from docflow.observability.redacted_spans import redacting
from support.api_fixtures import documents_body, make_api_tenant, ok, workflow_body
from support.otlp_receiver import Span, otlp_receiver
from support.process_fixtures import served, wait_for

PDF = b"%PDF-1.4 not really"
UPLOAD = "http://h/v1/uploads/v1.eyJ0IjoidGVuIn0.SIGNATUREabc"


def test_spans_of_upload_requests_hold_no_token(tmp_path: Path) -> None:
    with otlp_receiver() as received:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": received.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with served(tmp_path / "home", tmp_path / "serve.log", env) as server:
            engine = db.make_engine(f"sqlite:///{server.home / 'docflow.db'}")
            try:
                tenant = make_api_tenant(db.make_write_session_factory(engine), "Spans")
            finally:
                engine.dispose()
            urls = _upload_urls(server.base_url, tenant.token)
            assert httpx.put(urls[0], content=PDF, headers={"Content-Type": "application/pdf"})
            refused = httpx.put(urls[1], content=PDF, headers={"Content-Type": "image/png"})
            assert refused.status_code == 403
            wait_for(
                lambda: len(_upload_spans(received.snapshot())) >= 2,
                timeout=30,
                what="the upload requests' spans",
            )
            spans = received.snapshot()
    secrets = [tenant.token.rsplit("_", 1)[1]]
    for url in urls:
        token = url.rsplit("/", 1)[1]
        secrets += [token, token.rsplit(".", 1)[1]]
    exported = repr(spans)
    for secret in secrets:
        assert secret not in exported
    assert all(s.attributes["url.path"] == "/v1/uploads/{token}" for s in _upload_spans(spans))


def _upload_spans(spans: list[Span]) -> list[Span]:
    return [s for s in spans if str(s.attributes.get("url.path", "")).startswith("/v1/uploads/")]


def _upload_urls(base_url: str, api_key: str) -> list[str]:
    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        project = ok(client.post("/v1/projects", json={"name": "Spans"}), 201)
        path = f"/v1/projects/{project['id']}/workflows"
        workflow = ok(client.post(path, json=workflow_body()), 201)
        batch = {
            "project_id": project["id"],
            "workflow_id": workflow["id"],
            "documents": documents_body(2, size=len(PDF)),
        }
        created = ok(client.post("/v1/batches", json=batch), 202)
    return [document["upload_url"] for document in created["documents"]]


def test_attributes_events_and_status_are_redacted_on_export() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(redacting(memory)))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span(f"GET {UPLOAD}") as span:
        span.set_attribute("url.full", UPLOAD + "?X-Amz-Signature=QUERYSECRET")
        span.set_attribute("http.request.header.authorization", ("Bearer dfk_ab12cd34_KEY",))
        span.add_event("upload.retried", {"url": UPLOAD})
        span.record_exception(RuntimeError(f"could not take {UPLOAD}"))
        span.set_status(Status(StatusCode.ERROR, f"failed: {UPLOAD}"))
    (exported,) = memory.get_finished_spans()
    text = repr(
        (
            exported.name,
            dict(exported.attributes or {}),
            [(e.name, dict(e.attributes or {})) for e in exported.events],
            exported.status.description,
        )
    )
    for secret in ("eyJ0IjoidGVuIn0", "SIGNATUREabc", "QUERYSECRET", "KEY"):
        assert secret not in text
    assert exported.name == "GET http://h/v1/uploads/{token}"
    assert exported.attributes == {
        "url.full": "http://h/v1/uploads/{token}?X-Amz-Signature={redacted}",
        "http.request.header.authorization": "{redacted}",
    }
    event, exception = exported.events
    assert event.attributes == {"url": "http://h/v1/uploads/{token}"}
    assert exception.attributes is not None
    assert "could not take http://h/v1/uploads/{token}" in str(
        exception.attributes["exception.message"]
    )
    assert "{token}" in str(exception.attributes["exception.stacktrace"])
    assert exported.status.description == "failed: http://h/v1/uploads/{token}"
