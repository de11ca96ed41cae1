"""The batch status rule, and the every-minute scheduler: scheduled batches start at their time
once however often a tick runs, and documents past the upload deadline fail `upload_expired`
while their batch still completes."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from dbos import DBOS, SetWorkflowID

from docflow import bootstrap
from docflow.batches.flows import DUE_BATCHES_SCHEDULE, RETENTION_SCHEDULE, due_batches_tick
from docflow.batches.models import BatchStatus
from docflow.batches.steps import batch_outcome
from docflow.batches.triggers import start_due_batches
from docflow.documents.flows import DOWNSTREAM_SCHEDULE
from docflow.events.flows import PUBLISH_SCHEDULE, SWEEP_SCHEDULE
from docflow.idempotency.flows import PURGE_SCHEDULE
from docflow.kit.clock import utcnow
from docflow.reconciler.flows import RECONCILE_SCHEDULE
from docflow.runtime import launch
from docflow.runtime.context import services
from docflow.sources.flows import TICK_SCHEDULE
from support.api_fixtures import ok, post_project, workflow_body
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    create_batch,
    dbos_env,
    documents,
    get_batch,
    invoice_pdf,
    submit,
    upload_path,
    wait_terminal,
)

PDF = "application/pdf"


@pytest.mark.parametrize(
    ("succeeded", "review", "failed", "tolerated", "expected"),
    [
        (10, 0, 0, 10, BatchStatus.SUCCEEDED),
        (9, 1, 0, 10, BatchStatus.REVIEW_REQUIRED),
        (9, 0, 1, 10, BatchStatus.PARTIALLY_FAILED),  # exactly the tolerated share
        (8, 0, 2, 10, BatchStatus.FAILED),  # above it
        (8, 1, 1, 10, BatchStatus.REVIEW_REQUIRED),  # failures within tolerance, review wins
        (7, 1, 2, 10, BatchStatus.FAILED),  # failures beyond tolerance win over review
        (9, 0, 1, 0, BatchStatus.FAILED),  # nothing tolerated
        (0, 0, 10, 100, BatchStatus.PARTIALLY_FAILED),  # everything tolerated
        (0, 0, 0, 10, BatchStatus.SUCCEEDED),  # an empty batch
    ],
)
def test_batch_status_from_its_documents(
    succeeded: int, review: int, failed: int, tolerated: float, expected: BatchStatus
) -> None:
    total = succeeded + review + failed
    outcome = batch_outcome(
        total=total,
        succeeded=succeeded,
        review=review,
        failed=failed,
        tolerated_failure_percent=tolerated,
    )
    assert outcome == expected


def test_batch_status_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        batch_outcome(total=1, succeeded=1, review=0, failed=1, tolerated_failure_percent=10)


def _setup(env: DbosEnv, tolerated: float = 10) -> Setup:
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    body = workflow_body("scheduled", tolerated_failure_percent=tolerated)
    url = f"/v1/projects/{project['id']}/workflows"
    workflow = ok(env.client.post(url, json=body, headers=tenant.headers), 201)
    return Setup(env, tenant, project["id"], workflow["id"])


def _tick(at: datetime) -> None:
    """Run the schedule's workflow for the tick `at`, under the id DBOS gives that tick."""
    with SetWorkflowID(f"sched-{DUE_BATCHES_SCHEDULE}-{at.isoformat()}"):
        DBOS.start_workflow(due_batches_tick, at, None).get_result()


def _steps(workflow_id: str) -> list[str]:
    return [s["function_name"] for s in DBOS.list_workflow_steps(workflow_id)]


def test_a_scheduled_batch_starts_at_its_time_once(dbos_env: DbosEnv) -> None:  # noqa: F811
    setup = _setup(dbos_env)
    when = (utcnow() + timedelta(minutes=5)).replace(microsecond=0)
    pdf = invoice_pdf("INV-1", "1.00")
    batch = submit(setup, [("a.pdf", PDF, pdf)], scheduled_for=when.isoformat())
    _tick(when - timedelta(minutes=1))  # before its time: nothing
    assert get_batch(setup, batch["id"])["status"] == "CREATED"
    assert DBOS.list_workflows(workflow_ids=[batch["id"]]) == []
    _tick(when)
    _tick(when)  # the same tick again (a second scheduler): the same workflow, nothing new
    again = start_due_batches(services().write_factory, services().client, now=when)
    assert again in ([], [batch["id"]])  # a no-op enqueue if the flow has not begun yet
    done = wait_terminal(setup, batch["id"])
    assert done["status"] == "SUCCEEDED"
    assert len(DBOS.list_workflows(workflow_ids=[batch["id"]])) == 1
    assert _steps(batch["id"]).count("batch.begin") == 1
    tick_id = f"sched-{DUE_BATCHES_SCHEDULE}-{when.isoformat()}"
    assert _steps(tick_id) == ["batch.reconcile_uploads", "batch.start_due"]


def test_documents_past_the_upload_deadline_expire_and_the_batch_completes(
    dbos_env: DbosEnv,  # noqa: F811
) -> None:
    setup = _setup(dbos_env, tolerated=50)
    pdf = invoice_pdf("INV-2", "2.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf)), ("late.pdf", PDF, len(pdf))])
    ok(setup.env.client.put(upload_path(batch["documents"][0]["upload_url"]), content=pdf), 200)
    deadline = datetime.fromisoformat(batch["upload_deadline"])
    _tick(deadline - timedelta(seconds=30))
    assert get_batch(setup, batch["id"])["status"] == "CREATED"
    _tick(deadline + timedelta(seconds=1))
    done = wait_terminal(setup, batch["id"])
    docs = {d["name"]: d for d in documents(setup, batch["id"])}
    assert (docs["late.pdf"]["status"], docs["late.pdf"]["error_code"]) == (
        "FAILED",
        "upload_expired",
    )
    assert docs["a.pdf"]["status"] == "SUCCEEDED"
    assert (done["status"], done["succeeded_count"], done["failed_count"]) == (
        "PARTIALLY_FAILED",
        1,
        1,
    )
    # A late upload after the deadline changes nothing.
    late = ok(
        setup.env.client.put(upload_path(batch["documents"][1]["upload_url"]), content=pdf), 200
    )
    assert (late["status"], late["error_code"]) == ("FAILED", "upload_expired")


def test_the_schedule_is_installed_every_minute(dbos_env: DbosEnv) -> None:  # noqa: F811
    launch.install_schedules(dbos_env.settings, bootstrap.flows())
    try:
        schedule = DBOS.get_schedule(DUE_BATCHES_SCHEDULE)
        assert schedule is not None and schedule["schedule"] == "* * * * *"
        launch.install_schedules(
            dbos_env.settings, bootstrap.flows()
        )  # installing again replaces it
        names = [s["schedule_name"] for s in DBOS.list_schedules()]
        assert sorted(names) == sorted(
            [
                DUE_BATCHES_SCHEDULE,
                DOWNSTREAM_SCHEDULE,
                PUBLISH_SCHEDULE,
                SWEEP_SCHEDULE,
                PURGE_SCHEDULE,
                RECONCILE_SCHEDULE,
                RETENTION_SCHEDULE,
                TICK_SCHEDULE,
            ]
        )
        downstream = DBOS.get_schedule(DOWNSTREAM_SCHEDULE)
        assert downstream is not None and downstream["schedule"] == "*/15 * * * * *"
        reconcile = DBOS.get_schedule(RECONCILE_SCHEDULE)
        assert reconcile is not None and reconcile["schedule"] == "*/30 * * * * *"
    finally:
        for schedule in DBOS.list_schedules():
            DBOS.delete_schedule(schedule["schedule_name"])
