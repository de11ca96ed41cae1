"""A project's retention: the schedule deletes its terminal batches older than N days through
the batch deletion path (files, results, reviews and events with them, audited), a page at a time,
keeping files a re-run still uses and never touching a batch that has not finished. The clock
is the tick's own time, moved forward; batches are made old by moving their creation back."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from structlog.testing import capture_logs

from docflow import db
from docflow.batches.flows import RETENTION_PAGE, retention_tick
from docflow.batches.repository import BatchRepository
from docflow.batches.steps import apply_retention
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.kit.clock import utcnow
from docflow.runtime.context import services
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    create_batch,
    dbos_env,
    documents,
    invoice_pdf,
    setup,
    submit,
    wait_terminal,
)

PDF = "application/pdf"
DAY = timedelta(days=1)


def _age(s: Setup, batch_id: str, created_at: datetime) -> None:
    """Move a batch's creation time back (its documents are created with it), through the
    write sessions (on SQLite a read that turns into a write could meet the runtime's)."""
    with services().write_factory() as session, session.begin():
        batch = BatchRepository(session, s.tenant.tenant_id).get(batch_id)
        assert batch is not None
        batch.created_at = created_at


def _events(s: Setup, batch_id: str) -> list[tuple[str, Any]]:
    """(type, `by_retention`) of the events about the batch still in the outbox."""
    with services().session_factory() as session:
        db.bind_tenant(session, s.tenant.tenant_id)
        stmt = select(OutboxEvent).where(
            OutboxEvent.tenant_id == s.tenant.tenant_id,
            OutboxEvent.subject == f"batches/{batch_id}",
        )
        return [(e.type, e.data.get("by_retention")) for e in session.scalars(stmt)]


def _keep(s: Setup, days: int | None) -> dict[str, Any]:
    url = f"/v1/projects/{s.project_id}"
    answer = s.env.client.patch(url, json={"retention_days": days}, headers=s.tenant.headers)
    project: dict[str, Any] = ok(answer, 200)
    assert project["retention_days"] == days
    return project


def _finished(s: Setup, number: str) -> dict[str, Any]:
    batch = submit(s, [(f"{number}.pdf", PDF, invoice_pdf(number, "1.00"))])
    return wait_terminal(s, batch["id"])


def _status(s: Setup, path: str) -> int:
    return s.env.client.get(path, headers=s.tenant.headers).status_code


def _files(s: Setup) -> list[str]:
    root = s.env.settings.home / "files" / "tenants" / s.tenant.tenant_id
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_retention_deletes_old_finished_batches_and_keeps_shared_files(
    setup: Setup,  # noqa: F811
) -> None:
    old = _finished(setup, "INV-R1")
    rerun = ok(
        setup.env.client.post(
            f"/v1/batches/{old['id']}/rerun",
            json={"workflow_version": 1},
            headers=setup.tenant.headers,
        ),
        202,
    )
    wait_terminal(setup, rerun["id"])
    waiting = create_batch(setup, [("never.pdf", PDF, 100)])  # CREATED: not terminal
    now = utcnow()
    for batch in (old, waiting):
        _age(setup, batch["id"], now - 40 * DAY)
    # Another tenant's old batch, in a project without retention, stays.
    other = Setup(setup.env, setup.env.tenant(), "", "")
    project = post_project(setup.env.client, other.tenant)
    workflow = post_workflow(setup.env.client, other.tenant, project["id"])
    other = Setup(setup.env, other.tenant, project["id"], workflow["id"])
    foreign = _finished(other, "INV-R2")
    _age(other, foreign["id"], now - 400 * DAY)
    _keep(setup, 30)
    (original,) = documents(setup, old["id"])
    (rerun_document,) = documents(setup, rerun["id"])
    with capture_logs() as logs:
        retention_tick(now, None)  # the scheduled workflow, at the tick's time
    deleted = [e for e in logs if e["event"] == "batch.deleted"]
    assert [(e["batch_id"], e["actor"]) for e in deleted] == [(old["id"], "retention")]
    assert deleted[0]["events"] >= 2  # its document's and its own, gone with it
    assert _events(setup, old["id"]) == [(envelopes.BATCH_DELETED, True)]
    assert _status(setup, f"/v1/batches/{old['id']}") == 404
    assert _status(setup, f"/v1/documents/{original['id']}") == 404
    assert _status(setup, f"/v1/batches/{waiting['id']}") == 200
    assert _status(other, f"/v1/batches/{foreign['id']}") == 200
    # The re-run still reads the upload it shares with the deleted batch.
    file = setup.env.client.get(
        f"/v1/documents/{rerun_document['id']}/file", headers=setup.tenant.headers
    )
    assert file.status_code == 200 and file.content == invoice_pdf("INV-R1", "1.00")
    project_now = ok(
        setup.env.client.get(f"/v1/projects/{setup.project_id}", headers=setup.tenant.headers), 200
    )
    assert (project_now["batch_count"], project_now["document_count"]) == (2, 2)
    s = services()
    assert apply_retention(s.write_factory, s.storage, now=now, limit=RETENTION_PAGE) == 0
    # Once the re-run is old too, it goes with the file.
    _age(setup, rerun["id"], now - 31 * DAY)
    assert apply_retention(s.write_factory, s.storage, now=now, limit=RETENTION_PAGE) == 1
    assert [f for f in _files(setup) if f.startswith("documents/")] == []
    # Within the days nothing goes, and without retention nothing ever does.
    _age(setup, waiting["id"], now - 29 * DAY)
    _keep(setup, None)
    assert apply_retention(s.write_factory, s.storage, now=now + 1000 * DAY, limit=10) == 0


def test_retention_goes_a_page_at_a_time(setup: Setup) -> None:  # noqa: F811
    batches = [_finished(setup, f"INV-P{i}") for i in range(3)]
    now = utcnow()
    for batch in batches:
        _age(setup, batch["id"], now - 8 * DAY)
    _keep(setup, 7)
    s = services()
    assert apply_retention(s.write_factory, s.storage, now=now, limit=2) == 2
    left = [b["id"] for b in batches if _status(setup, f"/v1/batches/{b['id']}") == 200]
    assert left == [batches[2]["id"]]  # the oldest first
    assert apply_retention(s.write_factory, s.storage, now=now, limit=2) == 1
    assert apply_retention(s.write_factory, s.storage, now=now, limit=2) == 0


def test_retention_days_through_the_projects_api(setup: Setup) -> None:  # noqa: F811
    client, headers = setup.env.client, setup.tenant.headers
    created = client.post(
        "/v1/projects", json={"name": "Kept a week", "retention_days": 7}, headers=headers
    )
    project = ok(created, 201)
    assert project["retention_days"] == 7
    url = f"/v1/projects/{project['id']}"
    renamed = ok(client.patch(url, json={"name": "Renamed"}, headers=headers), 200)
    assert renamed["retention_days"] == 7  # unchanged when not sent
    assert (
        ok(client.patch(url, json={"retention_days": None}, headers=headers), 200)["retention_days"]
        is None
    )
    for bad in (0, -1, 36501, "seven", 2**70):
        refused = client.patch(url, json={"retention_days": bad}, headers=headers)
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["field"] == "retention_days"
    default = ok(client.post("/v1/projects", json={"name": "Forever"}, headers=headers), 201)
    assert default["retention_days"] is None
