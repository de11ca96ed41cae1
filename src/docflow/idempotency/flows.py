"""The idempotency keys' retention: a scheduled workflow that forgets keys past their time.

`docflow.idempotency.purge` runs hourly from the schedule `purge_schedule` builds; the retention
in hours, read from the settings at launch, travels as the schedule's context, so the workflow
reads no settings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dbos import DBOS, ScheduleInput

from docflow.config import Settings
from docflow.idempotency import steps
from docflow.runtime.context import BATCHES_QUEUE, Flows, services
from docflow.runtime.retry import db_step

PURGE_FLOW = "docflow.idempotency.purge"
PURGE_SCHEDULE = "idempotency-purge"
PURGE_CRON = "41 * * * *"


@db_step("idempotency.purge")
def purge_step(retention_hours: int) -> int:
    """Delete every tenant's keys older than `retention_hours` (safe to run twice)."""
    return steps.purge_all(services().write_factory, retention_hours=retention_hours)


@DBOS.workflow(name=PURGE_FLOW)
def purge_tick(scheduled_at: datetime, context: Any) -> None:
    """The hourly purge; `context` is the retention in hours."""
    purge_step(int(context))


def purge_schedule(*, retention_hours: int, queue_name: str) -> ScheduleInput:
    """The schedule entry of the hourly purge, for `DBOS.apply_schedules`."""
    return {
        "schedule_name": PURGE_SCHEDULE,
        "workflow_fn": purge_tick,
        "schedule": PURGE_CRON,
        "context": retention_hours,
        "queue_name": queue_name,
    }


def _schedules(settings: Settings) -> list[ScheduleInput]:
    return [
        purge_schedule(
            retention_hours=settings.idempotency_retention_hours, queue_name=BATCHES_QUEUE
        )
    ]


LAUNCH = Flows(schedules=_schedules)
