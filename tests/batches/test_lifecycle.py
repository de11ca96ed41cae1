"""Cancelling and deleting batches and projects, on real DBOS, the real engine and storage:
a cancelled batch ends its unfinished documents CANCELLED and its execution stops (each
document step checks, idempotently), late uploads are refused; a deleted batch takes its
documents, results, events and files with it, except a file a re-run still shares; a project
goes with its batches only on request, and never while one runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jsonschema
from dbos import DBOS
from sqlalchemy import select

from docflow import db
from docflow.batches.repository import BatchRepository
from docflow.batches.steps import begin_batch
from docflow.documents import steps
from docflow.documents.outcome import Extracted
from docflow.documents.service import start_processing
from docflow.documents.steps import Settled
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import envelope_of
from docflow.kit.clock import utcnow
from docflow.runtime import context
from support.api_fixtures import ok
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    create_batch,
    dbos_env,
    documents,
    get_batch,
    invoice_pdf,
    setup,
    submit,
    upload_path,
    wait_terminal,
)

PDF = "application/pdf"
LATER = "2099-01-01T00:00:00Z"


def _events(case: Setup, batch_id: str) -> list[str]:
    with case.env.session_factory() as session:
        db.bind_tenant(session, case.tenant.tenant_id)
        stmt = select(OutboxEvent.type).where(
            OutboxEvent.tenant_id == case.tenant.tenant_id,
            OutboxEvent.subject == f"batches/{batch_id}",
        )
        return list(session.scalars(stmt))


def _check_cancelled_event(case: Setup, batch_id: str) -> dict[str, Any]:
    """The batch's `batch.cancelled` envelope, valid against its committed schema."""
    with case.env.session_factory() as session:
        db.bind_tenant(session, case.tenant.tenant_id)
        stmt = select(OutboxEvent).where(
            OutboxEvent.tenant_id == case.tenant.tenant_id,
            OutboxEvent.subject == f"batches/{batch_id}",
            OutboxEvent.type == envelopes.BATCH_CANCELLED,
        )
        envelope = envelope_of(session.scalars(stmt).one()).to_dict()
    jsonschema.validate(envelope, envelopes.schema_for(envelopes.BATCH_CANCELLED))
    data: dict[str, Any] = envelope["data"]
    return data


def _files(case: Setup) -> set[Path]:
    root = case.env.settings.home / "files" / "tenants" / case.tenant.tenant_id / "documents"
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def test_cancelling_a_waiting_batch_ends_its_documents_and_refuses_late_uploads(
    setup: Setup,  # noqa: F811
) -> None:
    client, h = setup.env.client, setup.tenant.headers
    pdf = invoice_pdf("INV-40", "40.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf)), ("b.pdf", PDF, len(pdf))])
    first, second = batch["documents"]
    ok(client.put(upload_path(first["upload_url"]), content=pdf), 200)
    cancelled = ok(client.post(f"/v1/batches/{batch['id']}/cancel", headers=h), 200)
    assert (cancelled["status"], cancelled["cancelled_count"]) == ("CANCELLED", 2)
    assert cancelled["completed_at"] is not None
    docs = documents(setup, batch["id"])
    assert {(d["status"], d["error_code"]) for d in docs} == {("CANCELLED", "batch_cancelled")}
    assert _events(setup, batch["id"]) == ["docflow.batch.cancelled.v1"]
    data = _check_cancelled_event(setup, batch["id"])
    assert (data["status"], data["cancelled_count"], data["document_count"]) == ("CANCELLED", 2, 2)
    # A late upload is refused with its code, and nothing of it stays stored.
    before = _files(setup)
    late = setup.env.client.put(upload_path(second["upload_url"]), content=pdf)
    assert (late.status_code, late.json()["code"]) == (409, "batch_cancelled")
    assert _files(setup) == before
    reissue = client.post(f"/v1/documents/{second['id']}/upload-url", headers=h)
    assert (reissue.status_code, reissue.json()["code"]) == (409, "batch_cancelled")
    # Terminal now: a second cancellation is 409; a start changes nothing.
    again = client.post(f"/v1/batches/{batch['id']}/cancel", headers=h)
    assert (again.status_code, again.json()["code"]) == (409, "batch_finished")
    assert again.json()["batch_status"] == "CANCELLED" and again.json()["status"] == 409
    ok(client.post(f"/v1/batches/{batch['id']}/start", headers=h), 202)
    assert get_batch(setup, batch["id"])["status"] == "CANCELLED"
    listed = ok(client.get("/v1/batches", params={"status": "CANCELLED"}, headers=h), 200)
    assert batch["id"] in [b["id"] for b in listed["items"]]
    # The file that did land is still there to download.
    got = client.get(f"/v1/documents/{first['id']}/file", headers=h)
    assert (got.status_code, got.content) == (200, pdf)


def test_a_finished_batch_cannot_be_cancelled(setup: Setup) -> None:  # noqa: F811
    batch = submit(setup, [("a.pdf", PDF, invoice_pdf("INV-41", "41.00"))])
    done = wait_terminal(setup, batch["id"])
    answer = setup.env.client.post(
        f"/v1/batches/{batch['id']}/cancel", headers=setup.tenant.headers
    )
    assert (answer.status_code, answer.json()["code"]) == (409, "batch_finished")
    assert get_batch(setup, batch["id"])["status"] == done["status"]


def test_document_flows_of_a_cancelled_batch_stop_without_extracting(
    setup: Setup,  # noqa: F811
) -> None:
    pdf = invoice_pdf("INV-42", "42.00")
    batch = submit(setup, [("a.pdf", PDF, pdf), ("b.pdf", PDF, pdf)], scheduled_for=LATER)
    tenant_id = setup.tenant.tenant_id
    ids = tuple(d["id"] for d in batch["documents"])
    services = context.services()
    with services.write_session() as session, session.begin():
        begin_batch(session, services.client, batch_id=batch["id"])  # PROCESSING, no flow yet
    ok(
        setup.env.client.post(f"/v1/batches/{batch['id']}/cancel", headers=setup.tenant.headers),
        200,
    )
    # The flows (as the batch's start would have enqueued them) run, and stop at once.
    with services.write_session() as session, session.begin():
        start_processing(session, services.client, tenant_id=tenant_id, document_ids=ids)
    results = [DBOS.retrieve_workflow(f"doc:{i}").get_result() for i in ids]
    assert results == ["CANCELLED", "CANCELLED"]
    steps_run = {s["function_name"] for i in ids for s in DBOS.list_workflow_steps(f"doc:{i}")}
    assert "document.persist" not in steps_run
    for doc in _details(setup, list(ids)):
        assert (doc["status"], doc["confidence"], doc["result"]) == ("CANCELLED", None, None)
    final = get_batch(setup, batch["id"])
    assert (final["status"], final["cancelled_count"], final["succeeded_count"]) == (
        "CANCELLED",
        2,
        0,
    )
    assert _events(setup, batch["id"]) == ["docflow.batch.cancelled.v1"]


def test_each_document_step_checks_the_batch_and_counts_once(setup: Setup) -> None:  # noqa: F811
    """A document the cancellation skipped (another transaction held it) is ended by its own
    steps: before extracting (`begin_document`) and before recording (`persist`), each safe to
    run twice."""
    pdf = invoice_pdf("INV-43", "43.00")
    batch = submit(setup, [("a.pdf", PDF, pdf), ("b.pdf", PDF, pdf)], scheduled_for=LATER)
    (running, waiting), tenant_id = batch["documents"], setup.tenant.tenant_id
    services = context.services()
    with services.write_session() as session, session.begin():
        begin_batch(session, services.client, batch_id=batch["id"])
        begun = steps.begin_document(
            session,
            services.client,
            tenant_id=tenant_id,
            document_id=running["id"],
            detected_type="pdf",
        )
        assert begun.status == "PROCESSING"
        # The batch cancelled while both documents were held elsewhere: none ended by it.
        BatchRepository(session, tenant_id).set_cancelled(batch["id"], cancelled=0, now=utcnow())
    extraction = Extracted(
        status="SUCCEEDED",
        confidence=0.99,
        reasons=(),
        result={"fields": {}},
        result_ref=None,
        version=begun.version,
        batch_id=batch["id"],
    )
    for _ in range(2):
        with services.write_session() as session, session.begin():
            assert (
                steps.persist(
                    session,
                    services.client,
                    tenant_id=tenant_id,
                    document_id=running["id"],
                    extraction=extraction,
                )
                == "CANCELLED"
            )
            again = steps.begin_document(
                session,
                services.client,
                tenant_id=tenant_id,
                document_id=waiting["id"],
                detected_type="pdf",
            )
            assert again.status == "CANCELLED"
    assert steps.extract(services, tenant_id=tenant_id, document_id=waiting["id"]) == Settled(
        "CANCELLED"
    )
    final = get_batch(setup, batch["id"])
    assert (final["status"], final["cancelled_count"], final["succeeded_count"]) == (
        "CANCELLED",
        2,
        0,
    )
    assert all(d["result"] is None for d in _details(setup, [running["id"], waiting["id"]]))


def _details(case: Setup, ids: list[str]) -> list[dict[str, Any]]:
    return [
        ok(case.env.client.get(f"/v1/documents/{i}", headers=case.tenant.headers), 200) for i in ids
    ]


def test_deleting_batches_keeps_a_file_a_rerun_still_shares(setup: Setup) -> None:  # noqa: F811
    client, h = setup.env.client, setup.tenant.headers
    pdf = invoice_pdf("INV-44", "44.00")
    original = submit(setup, [("a.pdf", PDF, pdf)])
    wait_terminal(setup, original["id"])
    (uploaded,) = documents(setup, original["id"])
    rerun = ok(client.post(f"/v1/batches/{original['id']}/rerun", headers=h), 202)
    wait_terminal(setup, rerun["id"])
    (rerun_doc,) = rerun["documents"]
    project = ok(client.get(f"/v1/projects/{setup.project_id}", headers=h), 200)
    stored = _files(setup)
    assert any(uploaded["id"] in str(p) for p in stored)

    assert client.delete(f"/v1/batches/{original['id']}", headers=h).status_code == 204
    assert client.get(f"/v1/batches/{original['id']}", headers=h).status_code == 404
    assert client.get(f"/v1/documents/{uploaded['id']}", headers=h).status_code == 404
    # The re-run still runs the upload: its file is kept and still served.
    got = client.get(f"/v1/documents/{rerun_doc['id']}/file", headers=h)
    assert (got.status_code, got.content) == (200, pdf)
    after = ok(client.get(f"/v1/projects/{setup.project_id}", headers=h), 200)
    assert (after["batch_count"], after["document_count"]) == (
        project["batch_count"] - 1,
        project["document_count"] - 1,
    )
    # Its events went with it but the announcement of its deletion; the re-run's stay.
    assert _events(setup, original["id"]) == ["docflow.batch.deleted.v1"]
    assert "docflow.batch.completed.v1" in _events(setup, rerun["id"])

    assert client.delete(f"/v1/batches/{rerun['id']}", headers=h).status_code == 204
    assert not any(uploaded["id"] in str(p) for p in _files(setup))
    gone = client.delete(f"/v1/batches/{rerun['id']}", headers=h)
    assert (gone.status_code, gone.json()["code"]) == (404, "not_found")


def test_a_running_batch_is_not_deleted_and_a_project_goes_with_its_batches_on_request(
    setup: Setup,  # noqa: F811
) -> None:
    client, h = setup.env.client, setup.tenant.headers
    pdf = invoice_pdf("INV-45", "45.00")
    done = submit(setup, [("a.pdf", PDF, pdf)])
    wait_terminal(setup, done["id"])
    waiting = create_batch(setup, [("b.pdf", PDF, len(pdf))])
    running = client.delete(f"/v1/batches/{waiting['id']}", headers=h)
    assert (running.status_code, running.json()["code"]) == (409, "batch_running")
    project_url = f"/v1/projects/{setup.project_id}"
    assert client.delete(project_url, headers=h).status_code == 409  # has batches
    refused = client.delete(project_url, params={"cascade": "true"}, headers=h)
    assert (refused.status_code, refused.json()["code"]) == (409, "batch_running")
    assert refused.json()["batch_id"] == waiting["id"]
    assert get_batch(setup, done["id"])["status"] != "CANCELLED"  # nothing was removed
    ok(client.post(f"/v1/batches/{waiting['id']}/cancel", headers=h), 200)
    assert client.delete(project_url, params={"cascade": "true"}, headers=h).status_code == 204
    assert client.get(project_url, headers=h).status_code == 404
    for batch in (done, waiting):
        assert client.get(f"/v1/batches/{batch['id']}", headers=h).status_code == 404
    assert _files(setup) == set()
    assert client.get(f"/v1/workflows/{setup.workflow_id}", headers=h).status_code == 404


def test_cancelling_a_running_batch_leaves_every_document_counted_once(
    setup: Setup,  # noqa: F811
) -> None:
    """Cancel while the pipeline runs: whatever each document was doing, it ends terminal,
    either with the outcome recorded before the cancellation or CANCELLED, and the counts
    add up; no completion follows."""
    files = [(f"{i}.pdf", PDF, invoice_pdf(f"INV-5{i}", f"5{i}.00")) for i in range(6)]
    batch = submit(setup, files)  # the last upload starts it
    cancelled = setup.env.client.post(
        f"/v1/batches/{batch['id']}/cancel", headers=setup.tenant.headers
    )
    if cancelled.status_code == 409:  # it finished first: nothing left to check here
        assert cancelled.json()["code"] == "batch_finished"
        return
    assert ok(cancelled, 200)["status"] == "CANCELLED"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        statuses = [d["status"] for d in documents(setup, batch["id"])]
        if all(s in ("SUCCEEDED", "REVIEW_REQUIRED", "FAILED", "CANCELLED") for s in statuses):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"documents still running: {statuses}")
    time.sleep(1)  # a late step would change counts now; none may
    final = get_batch(setup, batch["id"])
    counts = {s: statuses.count(s) for s in ("SUCCEEDED", "REVIEW_REQUIRED", "FAILED", "CANCELLED")}
    assert final["status"] == "CANCELLED"
    assert (
        final["succeeded_count"],
        final["review_count"],
        final["failed_count"],
        final["cancelled_count"],
    ) == (counts["SUCCEEDED"], counts["REVIEW_REQUIRED"], counts["FAILED"], counts["CANCELLED"])
    assert sum(counts.values()) == final["document_count"] == 6
    assert _events(setup, batch["id"]) == ["docflow.batch.cancelled.v1"]
