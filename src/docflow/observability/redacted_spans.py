"""Spans redacted on their way out: the process's exporter is wrapped so every span it sends
has its name, attributes, events (an exception's message and stack trace) and status
redacted by `docflow.kit.redaction`, whatever instrumentation made it (FastAPI's server
spans carry the request's `url.path`, an upload URL's token included; DBOS's spans, our own).
A span is read-only once ended, so the exported copy is the redacted one.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from docflow.kit.redaction import redact_attributes, redact_text


def redacting(exporter: SpanExporter) -> SpanExporter:
    """`exporter` sending every span redacted (a span is read-only once ended, so the copy
    that leaves the process is the redacted one)."""
    return _RedactingExporter(exporter)


class _RedactingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([_redacted(span) for span in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _redacted(span: ReadableSpan) -> ReadableSpan:
    status = span.status
    if status.description:
        status = Status(status.status_code, redact_text(status.description))
    return ReadableSpan(
        name=redact_text(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=redact_attributes(span.attributes or {}),
        events=[
            Event(
                redact_text(event.name),
                redact_attributes(event.attributes or {}),
                event.timestamp,
            )
            for event in span.events
        ],
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
