"""The reconciler's scheduled workflow `docflow.reconcile` and its step `workflows.reconcile`.

The schedule `workflows-reconcile` runs it every `reconcile_interval_seconds`, with
`reconcile_max_rewinds` as its context; the step's body is `reconciler.steps.reconcile`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dbos import DBOS, ScheduleInput

from docflow.config import Settings
from docflow.reconciler import steps
from docflow.runtime.context import BATCHES_QUEUE, Flows, services
from docflow.runtime.retry import db_step

RECONCILE_FLOW = "docflow.reconcile"
RECONCILE_SCHEDULE = "workflows-reconcile"


@db_step("workflows.reconcile")
def reconcile_step(max_rewinds: int) -> dict[str, int]:
    s = services()
    return steps.reconcile(
        s.client,
        s.write_factory,
        max_rewinds=max_rewinds,
        downstream_lag_seconds=s.settings.downstream_lag_seconds,
    )


@DBOS.workflow(name=RECONCILE_FLOW)
def reconcile_tick(scheduled_at: datetime, context: Any) -> None:
    """One run of the reconciler's schedule; `context` is `reconcile_max_rewinds`."""
    reconcile_step(int(context))


def reconcile_schedule(
    *, interval_seconds: int, max_rewinds: int, queue_name: str
) -> ScheduleInput:
    """The schedule entry of the reconciler, for `DBOS.apply_schedules`."""
    return {
        "schedule_name": RECONCILE_SCHEDULE,
        "workflow_fn": reconcile_tick,
        "schedule": f"*/{interval_seconds} * * * * *",
        "context": max_rewinds,
        "queue_name": queue_name,
    }


def _schedules(settings: Settings) -> list[ScheduleInput]:
    return [
        reconcile_schedule(
            interval_seconds=settings.reconcile_interval_seconds,
            max_rewinds=settings.reconcile_max_rewinds,
            queue_name=BATCHES_QUEUE,
        )
    ]


LAUNCH = Flows(schedules=_schedules)
