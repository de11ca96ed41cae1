"""The webhooks consumer of the event registry: each published event becomes one delivery job
per matching endpoint of its project, enqueued in the consumer's own transaction.

The consumer only fans out (fast, and idempotent: the jobs' ids are fixed per event and
endpoint), so a slow or failing endpoint never holds up the event stream; each job then retries
on its own schedule (see `webhooks.flows`).
"""

from __future__ import annotations

from docflow import runtime
from docflow.events.consumers import ConsumerContext, register_consumer
from docflow.events.envelopes import Envelope
from docflow.webhooks import flows

CONSUMER_NAME = "webhooks"


def handle(context: ConsumerContext, envelope: Envelope) -> None:
    """Enqueue the event's deliveries under the event's tenant (committed with the consumer)."""
    client = runtime.services().client
    flows.start_deliveries(context.session, client, context.tenant_id, envelope.to_dict())


def register() -> None:
    """Register (or replace) the webhooks consumer; every event type goes through it."""
    register_consumer(
        CONSUMER_NAME,
        handles=lambda _envelope: True,
        handler=handle,
        max_attempts=5,
        concurrency=4,
        backoff_seconds=1.0,
    )


register()
