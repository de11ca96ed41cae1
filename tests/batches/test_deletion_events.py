"""Deleting a batch removes, in its transaction, the events about the batch and its documents
and what hangs off them (webhook deliveries and their attempts, dead letters naming them,
downstream records), on real DBOS and real batches; another batch's rows and another tenant's
stay."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from docflow import db
from docflow.documents.models import DownstreamRecord
from docflow.events import envelopes
from docflow.events.models import DeadLetter, OutboxEvent
from docflow.events.outbox import envelope_of
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.runtime import context
from docflow.webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    dbos_env,
    documents,
    invoice_pdf,
    setup,
    submit,
    wait_terminal,
)

PDF = "application/pdf"


@dataclass(frozen=True)
class Rows:
    """How many rows of each kind hang off a batch's events."""

    events: int
    deliveries: int
    attempts: int
    dead_letters: int
    downstream: int


def _finished_batch(case: Setup, number: str) -> tuple[str, list[str]]:
    """A batch of two documents run to its end: (batch id, subjects of its events)."""
    files = [(f"{number}-{i}.pdf", PDF, invoice_pdf(f"INV-{number}{i}", "12.00")) for i in (1, 2)]
    batch = submit(case, files)
    wait_terminal(case, batch["id"])
    subjects = [f"batches/{batch['id']}"] + [
        f"documents/{d['id']}" for d in documents(case, batch["id"])
    ]
    # Its documents' search entries are written after it ends, recording their downstream
    # state (READY) and leaving every row of the batch in place.
    deadline = time.monotonic() + 30
    while _rows(case, subjects, []).downstream < 2:
        assert time.monotonic() < deadline, "no downstream records"
        time.sleep(0.05)
    return batch["id"], subjects


def _hang_off(case: Setup, subjects: list[str]) -> None:
    """A dead delivery with an attempt and a dead letter for each event about `subjects`, as
    a failing endpoint leaves them."""
    tenant_id, now = case.tenant.tenant_id, utcnow()
    with context.services().write_session() as session, session.begin():
        db.bind_tenant(session, tenant_id)
        events = session.scalars(
            select(OutboxEvent).where(
                OutboxEvent.tenant_id == tenant_id, OutboxEvent.subject.in_(subjects)
            )
        ).all()
        assert events
        for event in events:
            delivery_id = ids.new_id("whd")
            session.add(
                WebhookDelivery(
                    tenant_id=tenant_id,
                    id=delivery_id,
                    endpoint_id="whe_gone",
                    event_id=event.id,
                    event_type=event.type,
                    status=DeliveryStatus.DEAD,
                    attempts=1,
                    created_at=now,
                    updated_at=now,
                )
            )
            session.flush()
            session.add(
                WebhookAttempt(
                    tenant_id=tenant_id,
                    id=ids.new_id("wha"),
                    delivery_id=delivery_id,
                    attempt=1,
                    status_code=503,
                    latency_ms=3,
                    attempted_at=now,
                )
            )
            session.add(
                DeadLetter(
                    tenant_id=tenant_id,
                    id=ids.new_id("dlq"),
                    consumer="webhooks",
                    target="whe_gone",
                    event_id=event.id,
                    event_type=event.type,
                    envelope={"id": event.id},
                    error="HTTP 503",
                    category="http_5xx",
                    attempts=1,
                    created_at=now,
                )
            )


def _event_ids(case: Setup, subjects: list[str]) -> list[str]:
    tenant_id = case.tenant.tenant_id
    with case.env.session_factory() as session:
        db.bind_tenant(session, tenant_id)
        stmt = select(OutboxEvent.id).where(
            OutboxEvent.tenant_id == tenant_id,
            OutboxEvent.subject.in_(subjects),
            OutboxEvent.type.not_in([envelopes.BATCH_DELETED, envelopes.DOCUMENT_DELETED]),
        )
        return list(session.scalars(stmt))


def _deletion_announced(case: Setup, batch_id: str) -> dict[str, Any]:
    """The data of the batch's `batch.deleted` envelope, valid against its committed schema."""
    with case.env.session_factory() as session:
        db.bind_tenant(session, case.tenant.tenant_id)
        stmt = select(OutboxEvent).where(
            OutboxEvent.tenant_id == case.tenant.tenant_id,
            OutboxEvent.subject == f"batches/{batch_id}",
            OutboxEvent.type == envelopes.BATCH_DELETED,
        )
        envelope = envelope_of(session.scalars(stmt).one()).to_dict()
    jsonschema.validate(envelope, envelopes.schema_for(envelopes.BATCH_DELETED))
    data: dict[str, Any] = envelope["data"]
    return data


def _rows(case: Setup, subjects: list[str], event_ids: list[str]) -> Rows:
    """The rows about `subjects` (events by subject, but a deletion's announcement) and keyed
    by `event_ids` (read before a deletion: a delivery or letter left behind its event would
    escape a count by subject)."""
    with case.env.session_factory() as session:
        db.bind_tenant(session, case.tenant.tenant_id)
        deliveries = select(WebhookDelivery.id).where(WebhookDelivery.event_id.in_(event_ids))
        document_ids = [s.removeprefix("documents/") for s in subjects if "documents/" in s]
        return Rows(
            events=len(_event_ids(case, subjects)),
            deliveries=_count(session, WebhookDelivery, WebhookDelivery.event_id.in_(event_ids)),
            attempts=_count(session, WebhookAttempt, WebhookAttempt.delivery_id.in_(deliveries)),
            dead_letters=_count(session, DeadLetter, DeadLetter.event_id.in_(event_ids)),
            downstream=_count(
                session, DownstreamRecord, DownstreamRecord.document_id.in_(document_ids)
            ),
        )


def _count(session: Session, model: type, condition: object) -> int:
    stmt = select(func.count()).select_from(model).where(condition)  # type: ignore[arg-type]
    return int(session.execute(stmt).scalar_one())


def _other_tenant(env: DbosEnv) -> Setup:
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    workflow = post_workflow(env.client, tenant, project["id"])
    return Setup(env, tenant, project["id"], workflow["id"])


def test_deleting_a_batch_removes_its_events_and_what_hangs_off_them(
    setup: Setup,  # noqa: F811
) -> None:
    client, h = setup.env.client, setup.tenant.headers
    deleted, deleted_subjects = _finished_batch(setup, "A")
    kept, kept_subjects = _finished_batch(setup, "B")
    other = _other_tenant(setup.env)
    _, other_subjects = _finished_batch(other, "C")
    for case, subjects in (
        (setup, deleted_subjects),
        (setup, kept_subjects),
        (other, other_subjects),
    ):
        _hang_off(case, subjects)
    cases = {
        "deleted": (setup, deleted_subjects),
        "kept": (setup, kept_subjects),
        "other": (other, other_subjects),
    }
    event_ids = {name: _event_ids(*case) for name, case in cases.items()}
    before = {name: _rows(*case, event_ids[name]) for name, case in cases.items()}
    for rows in before.values():
        # Two document events at least, the batch's, each with its delivery, attempt and
        # letter; every completed document has its downstream record.
        assert rows.events >= 3 and rows.downstream == 2, rows
        assert rows.deliveries == rows.attempts == rows.dead_letters == rows.events, rows

    assert client.delete(f"/v1/batches/{deleted}", headers=h).status_code == 204

    after = {name: _rows(*case, event_ids[name]) for name, case in cases.items()}
    assert after == {**before, "deleted": Rows(0, 0, 0, 0, 0)}
    letters = ok(client.get("/v1/dead-letters", headers=h), 200)["items"]
    assert {item["event_id"] for item in letters} == set(event_ids["kept"])
    announced = _deletion_announced(setup, deleted)
    assert announced == {
        "tenant_id": setup.tenant.tenant_id,
        "project_id": setup.project_id,
        "batch_id": deleted,
        "workflow_id": setup.workflow_id,
        "status": "SUCCEEDED",
        "document_count": 2,
        "event_count": before["deleted"].events,
        "by_retention": False,
    }
    assert client.get(f"/v1/batches/{kept}", headers=h).status_code == 200


def test_deleting_a_project_with_its_batches_removes_their_events(
    setup: Setup,  # noqa: F811
) -> None:
    client, h = setup.env.client, setup.tenant.headers
    first, first_subjects = _finished_batch(setup, "D")
    second, second_subjects = _finished_batch(setup, "E")
    subjects = first_subjects + second_subjects
    _hang_off(setup, subjects)
    event_ids = _event_ids(setup, subjects)
    assert _rows(setup, subjects, event_ids).dead_letters >= 6

    url = f"/v1/projects/{setup.project_id}"
    assert client.delete(url, params={"cascade": "true"}, headers=h).status_code == 204

    assert _rows(setup, subjects, event_ids) == Rows(0, 0, 0, 0, 0)
    for batch_id in (first, second):
        assert _deletion_announced(setup, batch_id)["batch_id"] == batch_id


def _document_deletion_announced(case: Setup, document_id: str) -> dict[str, Any]:
    """The data of the document's `document.deleted` envelope, valid against its schema."""
    with case.env.session_factory() as session:
        db.bind_tenant(session, case.tenant.tenant_id)
        stmt = select(OutboxEvent).where(
            OutboxEvent.tenant_id == case.tenant.tenant_id,
            OutboxEvent.subject == f"documents/{document_id}",
        )
        (event,) = session.scalars(stmt).all()  # the announcement alone stays
        envelope = envelope_of(event).to_dict()
    jsonschema.validate(envelope, envelopes.schema_for(envelopes.DOCUMENT_DELETED))
    data: dict[str, Any] = envelope["data"]
    return data


def _files(case: Setup, document_id: str) -> list[Path]:
    root = case.env.settings.home / "files" / "tenants" / case.tenant.tenant_id / "documents"
    return [p for p in root.rglob("*") if p.is_file() and document_id in str(p)]


def _search_hits(case: Setup) -> set[str]:
    url = "/v1/search"
    page = ok(case.env.client.get(url, params={"q": "INV"}, headers=case.tenant.headers), 200)
    return {hit["document_id"] for hit in page["items"]}


def test_deleting_a_document_removes_it_and_what_hangs_off_it_alone(
    setup: Setup,  # noqa: F811
) -> None:
    client, h = setup.env.client, setup.tenant.headers
    batch_id, batch_subjects = _finished_batch(setup, "F")
    deleted, kept = (s.removeprefix("documents/") for s in batch_subjects[1:])
    _, other_batch_subjects = _finished_batch(setup, "G")
    other = _other_tenant(setup.env)
    _, other_subjects = _finished_batch(other, "H")
    for case, subjects in (
        (setup, batch_subjects),
        (setup, other_batch_subjects),
        (other, other_subjects),
    ):
        _hang_off(case, subjects)
    cases = {
        "deleted": (setup, [f"documents/{deleted}"]),
        "batch": (setup, [f"batches/{batch_id}", f"documents/{kept}"]),
        "other batch": (setup, other_batch_subjects),
        "other tenant": (other, other_subjects),
    }
    event_ids = {name: _event_ids(*case) for name, case in cases.items()}
    before = {name: _rows(*case, event_ids[name]) for name, case in cases.items()}
    assert before["deleted"].events >= 1 and before["deleted"].downstream == 1
    assert _search_hits(setup) >= {deleted, kept}
    assert _files(setup, deleted) and _files(setup, kept)
    project = ok(client.get(f"/v1/projects/{setup.project_id}", headers=h), 200)
    other_document = other_subjects[1].removeprefix("documents/")
    assert client.delete(f"/v1/documents/{other_document}", headers=h).status_code == 404

    assert client.delete(f"/v1/documents/{deleted}", headers=h).status_code == 204

    after = {name: _rows(*case, event_ids[name]) for name, case in cases.items()}
    assert after == {**before, "deleted": Rows(0, 0, 0, 0, 0)}
    assert client.get(f"/v1/documents/{deleted}", headers=h).status_code == 404
    assert client.get(f"/v1/documents/{kept}", headers=h).status_code == 200
    assert deleted not in _search_hits(setup) and kept in _search_hits(setup)
    assert _files(setup, deleted) == [] and _files(setup, kept)
    batch = ok(client.get(f"/v1/batches/{batch_id}", headers=h), 200)
    counts = ("status", "document_count", "uploaded_count", "succeeded_count")
    assert [batch[c] for c in counts] == ["SUCCEEDED", 1, 1, 1]
    assert [d["id"] for d in documents(setup, batch_id)] == [kept]
    moved = ok(client.get(f"/v1/projects/{setup.project_id}", headers=h), 200)
    assert moved["document_count"] == project["document_count"] - 1
    assert _document_deletion_announced(setup, deleted) == {
        "tenant_id": setup.tenant.tenant_id,
        "project_id": setup.project_id,
        "batch_id": batch_id,
        "document_id": deleted,
        "status": "SUCCEEDED",
        "event_count": before["deleted"].events,
    }
    assert client.get(f"/v1/documents/{other_document}", headers=other.tenant.headers).is_success
    gone = client.delete(f"/v1/documents/{deleted}", headers=h)
    assert (gone.status_code, gone.json()["code"]) == (404, "not_found")
