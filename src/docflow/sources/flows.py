"""The sources' schedule and their poll workflow.

The schedule `sources-tick` runs `docflow.sources_tick` every `sources_tick_seconds`: its step
`sources.enqueue_due` enqueues one `docflow.source_poll` per due source (id
`source:<source id>:<due time>`, so two schedulers, or a re-run of a tick, poll it once) and
moves the source's next poll to its cron's next time. `poll now` enqueues the same workflow with
an id of its own. A poll is three steps, each safe to repeat (see `sources.service`):
`source.settle` (move earlier files), `source.claim` (take the new files into one batch),
`source.upload` (store them through the upload service and start the batch).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dbos import DBOS, ScheduleInput

from docflow.config import Settings
from docflow.runtime.context import BATCHES_QUEUE, Flows, services
from docflow.runtime.retry import db_step
from docflow.sources import service
from docflow.sources.places import sources_place
from docflow.sources.service import POLL_FLOW

TICK_FLOW = "docflow.sources_tick"
TICK_SCHEDULE = "sources-tick"


@db_step("sources.enqueue_due")
def enqueue_due(now: datetime) -> int:
    s = services()
    return service.enqueue_due(s.write_factory, s.client, now=now)


@DBOS.workflow(name=TICK_FLOW)
def sources_tick(scheduled_at: datetime, context: Any) -> None:
    """One tick of the sources' schedule: enqueue a poll of every due source."""
    enqueue_due(scheduled_at)


@db_step("source.settle")
def settle(tenant_id: str, source_id: str) -> int:
    s = services()
    return service.settle(
        s.write_factory, place=sources_place(s.settings), tenant_id=tenant_id, source_id=source_id
    )


@db_step("source.claim")
def claim(tenant_id: str, source_id: str, run_id: str) -> str | None:
    s = services()
    return service.claim(
        s.write_factory,
        place=sources_place(s.settings),
        tenant_id=tenant_id,
        source_id=source_id,
        run_id=run_id,
        settings=s.settings,
    )


@db_step("source.upload")
def upload(tenant_id: str, run_id: str) -> None:
    s = services()
    service.upload(
        s.write_factory,
        s.storage,
        s.client,
        place=sources_place(s.settings),
        tenant_id=tenant_id,
        run_id=run_id,
        max_bytes=s.settings.max_document_bytes,
    )


@DBOS.workflow(name=POLL_FLOW)
def poll_flow(tenant_id: str, source_id: str, run_id: str) -> str | None:
    """Poll a source once: move its settled files, take its new ones into one batch, store
    them and start it; returns the batch id (None when nothing was taken)."""
    settle(tenant_id, source_id)
    batch_id = claim(tenant_id, source_id, run_id)
    if batch_id is not None:
        upload(tenant_id, run_id)
    return batch_id


def tick_schedule(*, interval_seconds: int, queue_name: str) -> ScheduleInput:
    """The schedule entry of the sources' tick, for `DBOS.apply_schedules`."""
    return {
        "schedule_name": TICK_SCHEDULE,
        "workflow_fn": sources_tick,
        "schedule": f"*/{interval_seconds} * * * * *",
        "context": None,
        "queue_name": queue_name,
    }


def _schedules(settings: Settings) -> list[ScheduleInput]:
    return [tick_schedule(interval_seconds=settings.sources_tick_seconds, queue_name=BATCHES_QUEUE)]


LAUNCH = Flows(schedules=_schedules)
