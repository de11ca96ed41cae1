"""The webhooks consumer of the event registry: each published event becomes one delivery job
per matching endpoint of its project, enqueued in the consumer's own transaction.

The consumer only fans out (fast, and idempotent: the jobs' ids are fixed per event and
endpoint), so a slow or failing endpoint never holds up the event stream; each job then retries
on its own schedule (see `webhooks.flows`). Its handler is a step body, `webhooks.steps.fan_out`.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from docflow.events.consumers import register_consumer
from docflow.events.envelopes import Envelope
from docflow.webhooks import service, steps
from docflow.webhooks.jobs import CONSUMER_NAME, matching_endpoints, workflow_id

__all__ = ["CONSUMER_NAME", "has_endpoints", "jobs", "register"]


def has_endpoints(session: Session, envelope: Envelope) -> bool:
    """Whether the event's project has an enabled endpoint for its type: the consumer runs
    only then, so events nobody subscribed to cost no consumer job."""
    project_id = envelope.data.get("project_id")
    if not isinstance(project_id, str):
        return False
    return bool(
        matching_endpoints(
            session, envelope.tenant_id, project_id=project_id, event_type=envelope.type
        )
    )


def jobs(session: Session, envelope: Envelope) -> list[str]:
    """The ids of the event's first delivery jobs, one per matching endpoint (a replay
    resumes those that failed)."""
    project_id = envelope.data.get("project_id")
    if not isinstance(project_id, str):
        return []
    endpoint_ids = matching_endpoints(
        session, envelope.tenant_id, project_id=project_id, event_type=envelope.type
    )
    return [workflow_id(envelope.id, e) for e in endpoint_ids]


def register() -> None:
    """Register (or replace) the webhooks consumer, for events with a matching endpoint; its
    dead letters for one endpoint (dead deliveries) are redriven to that endpoint alone, the
    retention sweep deletes its finished deliveries, and a replay resumes the event's delivery
    jobs that failed."""
    register_consumer(
        CONSUMER_NAME,
        handles=has_endpoints,
        handler=steps.fan_out,
        max_attempts=5,
        concurrency=4,
        backoff_seconds=1.0,
        redrive_target=service.redrive_dead_delivery,
        sweep=steps.sweep,
        jobs=jobs,
    )


register()
