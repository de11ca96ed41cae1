"""A real OTLP/HTTP trace receiver on 127.0.0.1: it decodes each `POST /v1/traces` (protobuf)
with OpenTelemetry's own message types and keeps the spans, for tests of exported traces."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from support.http_server import serving


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    service: str
    attributes: dict[str, object]
    events: tuple[tuple[str, dict[str, object]], ...] = ()
    status_message: str = ""


@dataclass
class Received:
    url: str
    spans: list[Span] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> list[Span]:
        with self.lock:
            return list(self.spans)


def _value(any_value: object) -> object:
    kind = any_value.WhichOneof("value")  # type: ignore[attr-defined]
    return getattr(any_value, kind) if kind else None


@contextmanager
def otlp_receiver() -> Iterator[Received]:
    received = Received(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            spans = []
            for resource_spans in request.resource_spans:
                service = next(
                    (
                        str(_value(a.value))
                        for a in resource_spans.resource.attributes
                        if a.key == "service.name"
                    ),
                    "",
                )
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        spans.append(
                            Span(
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                name=span.name,
                                service=service,
                                attributes={a.key: _value(a.value) for a in span.attributes},
                                events=tuple(
                                    (e.name, {a.key: _value(a.value) for a in e.attributes})
                                    for e in span.events
                                ),
                                status_message=span.status.message,
                            )
                        )
            with received.lock:
                received.spans.extend(spans)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_args: object) -> None:
            pass

    with serving(Handler) as server:
        received.url = f"http://127.0.0.1:{server.server_address[1]}"
        yield received
