"""The webhooks consumer of the event registry: each published event becomes one delivery job
per endpoint of its project that receives it (`webhooks.jobs.select_endpoints`), enqueued in
the consumer's own transaction.

The consumer only fans out (fast, and idempotent: the jobs' ids are fixed per event and
endpoint), so a slow or failing endpoint never holds up the event stream; each job then retries
on its own schedule (see `webhooks.flows`). Its handler is a step body, `webhooks.steps.fan_out`.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from docflow.events.consumers import Fanout, register_consumer
from docflow.events.envelopes import Envelope
from docflow.webhooks import service, steps
from docflow.webhooks.jobs import CONSUMER_NAME, select_endpoints, workflow_id

__all__ = ["CONSUMER_NAME", "has_endpoints", "register", "targets"]


def has_endpoints(session: Session, envelope: Envelope) -> bool:
    """Whether an endpoint of the event's project receives it (`select_endpoints`): the
    consumer runs only then, so events nobody receives cost no consumer job."""
    return bool(select_endpoints(session, envelope.tenant_id, envelope).endpoint_ids)


def targets(session: Session, envelope: Envelope) -> Fanout:
    """The event's first delivery jobs, one per endpoint that receives it (a replay resumes
    those that failed), and the endpoints that do not, by reason: the selection live delivery
    makes (`select_endpoints`)."""
    selection = select_endpoints(session, envelope.tenant_id, envelope)
    jobs = [workflow_id(envelope.id, e) for e in selection.endpoint_ids]
    return Fanout(jobs, selection.skipped)


def register() -> None:
    """Register (or replace) the webhooks consumer, for events an endpoint receives; its
    dead letters for one endpoint (dead deliveries) are redriven to that endpoint alone, the
    retention sweep deletes its finished deliveries, and a replay resumes the event's delivery
    jobs that failed and counts the endpoints it skipped."""
    register_consumer(
        CONSUMER_NAME,
        handles=has_endpoints,
        handler=steps.fan_out,
        max_attempts=5,
        concurrency=4,
        backoff_seconds=1.0,
        redrive_target=service.redrive_dead_delivery,
        sweep=steps.sweep,
        targets=targets,
    )


register()
