"""Handing an event over to a consumer: the one place that enqueues consumer workflows.

The publisher's dispatch step hands every fresh event over; redrive and replay (in
`events.service`) hand archived ones over again with their original ids. The consumer workflow
`docflow.events.consume` of (event, consumer) has the id `{source}:{event_id}:{consumer}`, so a
second hand-over of the same pair is a no-op.
"""

from __future__ import annotations

from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow.events.consumers import Consumer
from docflow.events.envelopes import Envelope
from docflow.observability import tracing

CONSUME_FLOW = "docflow.events.consume"


def consumer_workflow_id(envelope: Envelope, consumer_name: str) -> str:
    """The id of the consumer workflow of (event, consumer): one execution per pair."""
    return f"{envelope.source}:{envelope.id}:{consumer_name}"


def hand_over(
    session: Session,
    client: DBOSClient,
    envelope: Envelope,
    consumer: Consumer,
    workflow_id: str,
    *,
    traceparent: str | None = None,
) -> None:
    """Enqueue `consumer`'s workflow for `envelope` with `workflow_id` in the session's
    transaction (no-op when that workflow exists), in the trace `traceparent` names (that of
    the change that wrote the event) when given."""
    options: EnqueueOptions = {
        "workflow_name": CONSUME_FLOW,
        "queue_name": consumer.queue,
        "workflow_id": workflow_id,
    }
    parent = tracing.context_of(traceparent)
    if parent is not None:
        options["otel_context"] = parent
    client.enqueue_in_transaction(session, options, consumer.name, envelope.to_dict())
