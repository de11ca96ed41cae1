"""OpenTelemetry traces: off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, then exported over OTLP/HTTP.

One trace follows a batch from the request that creates it: the API's server span (FastAPI's
own, see `http/tracing.py`), the batch's execution and every document's workflow and steps
(DBOS makes their spans; the creating request's `traceparent` is kept on the batch and handed
to every enqueue as the workflow's trace context, which DBOS keeps in the workflow's
attributes, so it survives queues, restarts and other processes), and the events' consumers
and webhook deliveries (each outbox row keeps the `traceparent` of the step that wrote it).
Only the W3C trace context travels: never baggage, never document content.

Every span is redacted before it is exported (`redacted_spans`, `docflow.kit.redaction`): its
name, attributes, events (an exception's message and stack trace) and status hold no upload
token, signed URL parameter, API key or `Authorization` value, whatever instrumentation made it.
"""

from __future__ import annotations

import os

import structlog
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = structlog.get_logger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_PROPAGATOR = TraceContextTextMapPropagator()
_configured = False


def enabled() -> bool:
    """Whether traces are exported (an OTLP endpoint is configured)."""
    return any(os.environ.get(name) for name in ENDPOINT_VARIABLES)


def configure(service: str = "docflow") -> bool:
    """Install the process's tracer provider exporting over OTLP/HTTP, once, when an endpoint
    is configured (`OTEL_SERVICE_NAME` overrides `service`; the SDK exports what is buffered
    when the process exits); whether traces are on."""
    global _configured
    if _configured or not enabled():
        return _configured
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from docflow.observability.redacted_spans import redacting

    name = os.environ.get("OTEL_SERVICE_NAME") or service
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(redacting(OTLPSpanExporter())))
    trace.set_tracer_provider(provider)
    _configured = True
    log.info("tracing.enabled", service=name)
    return True


def traceparent() -> str | None:
    """The W3C `traceparent` of the current span, or None outside a recorded trace."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


def context_of(parent: str | None) -> Context | None:
    """The trace context a stored `traceparent` names (None when absent or malformed)."""
    if not parent:
        return None
    found = _PROPAGATOR.extract({"traceparent": parent})
    return found if trace.get_current_span(found).get_span_context().is_valid else None


def current() -> Context:
    """The current context, for an enqueue made inside a span (a step's, a request's)."""
    return otel_context.get_current()


def ids() -> dict[str, str]:
    """The current trace and span ids, as logs carry them (empty outside a trace)."""
    span = trace.get_current_span().get_span_context()
    if not span.is_valid:
        return {}
    return {"trace_id": format(span.trace_id, "032x"), "span_id": format(span.span_id, "016x")}


def add_trace_ids(
    _logger: object, _name: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """A structlog processor: every line logged inside a span names its trace and span."""
    for key, value in ids().items():
        event.setdefault(key, value)
    return event
