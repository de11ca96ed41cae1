"""The announced downstream state of a document, on the database under test: its first READY
recorded silently, READY -> DEGRADED when a webhook delivery of its events dies (after its last
attempt, or given up on by the reconciler) and back after the redelivery, lag announced by the
periodic pass (bounded per tick), one event per real change under concurrent checks, none when
nothing changed, and a dead announcement that never degrades the document it announced."""

from __future__ import annotations

import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from docflow.db import bind_tenant, make_write_session_factory
from docflow.documents.downstream import announce
from docflow.documents.models import Document
from docflow.documents.repository import DocumentRepository, DownstreamRepository
from docflow.documents.steps import downstream_pass
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import emit, envelope_of
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants
from docflow.webhooks import steps as webhook_steps
from docflow.webhooks.models import DELIVERY_PREFIX, ENDPOINT_PREFIX, WebhookDelivery
from search.helpers import deliver, processed_batch, result

LAG = 60.0
CHANGED = envelopes.DOCUMENT_DOWNSTREAM_CHANGED


def _check(session: Session, tenant: TenantContext, doc: Document) -> Any:
    return announce(session, tenant.tenant_id, doc.id, lag_seconds=LAG, now=utcnow())


def _announcements(session: Session, tenant_id: str, doc: Document) -> list[dict[str, Any]]:
    """The document's downstream_changed envelopes, oldest first, each checked against the
    type's committed schema."""
    bind_tenant(session, tenant_id)
    rows = session.scalars(
        select(OutboxEvent)
        .where(
            OutboxEvent.tenant_id == tenant_id,
            OutboxEvent.type == CHANGED,
            OutboxEvent.subject == f"documents/{doc.id}",
        )
        .order_by(OutboxEvent.id)
    ).all()
    found = [envelope_of(r).to_dict() for r in rows]
    for envelope in found:
        jsonschema.validate(envelope, envelopes.schema_for(CHANGED))
    return found


def _moves(session: Session, tenant_id: str, doc: Document) -> list[tuple[Any, ...]]:
    return [
        (e["data"]["from_state"], e["data"]["to_state"], e["data"]["lagging"])
        for e in _announcements(session, tenant_id, doc)
    ]


def _delivery(
    session: Session,
    tenant_id: str,
    doc: Document,
    status: str,
    *,
    age: float = 5.0,
    of: dict[str, Any] | None = None,
) -> WebhookDelivery:
    """A delivery, `age` seconds old, of the envelope `of` or else of a new outcome event
    about the document."""
    if of is None:
        event = emit(
            session,
            tenant_id=tenant_id,
            type=envelopes.DOCUMENT_COMPLETED,
            subject=f"documents/{doc.id}",
            data={"tenant_id": tenant_id, "document_id": doc.id},
        )
        of = envelope_of(event).to_dict()
    created = utcnow() - timedelta(seconds=age)
    delivery = WebhookDelivery(
        tenant_id=tenant_id,
        id=ids.new_id(DELIVERY_PREFIX),
        endpoint_id=ids.new_id(ENDPOINT_PREFIX),
        event_id=of["id"],
        event_type=of["type"],
        status=status,
        created_at=created,
        updated_at=created,
    )
    session.add(delivery)
    session.flush()
    return delivery


def _recorded(session: Session, tenant_id: str, doc: Document) -> tuple[str, list[str]] | None:
    record = DownstreamRepository(session, tenant_id).get(doc.id)
    return None if record is None else (record.state, record.lagging)


def test_the_first_ready_is_recorded_silently_and_an_unchanged_state_emits_nothing(
    session: Session, tenant_a: TenantContext, tmp_path: Path
) -> None:
    (doc,) = processed_batch(session, tenant_a, [result("9.00", "2026-01-02")], project="an")
    # No entry yet, within the lag: PENDING is never recorded.
    assert _check(session, tenant_a, doc) is None
    assert _recorded(session, tenant_a.tenant_id, doc) is None
    deliver(session, LocalStorage(tmp_path), tenant_a, doc.id)
    assert _check(session, tenant_a, doc) is None
    assert _recorded(session, tenant_a.tenant_id, doc) == ("READY", [])
    # A delivered one and one under way within the setting change nothing either.
    _delivery(session, tenant_a.tenant_id, doc, "DELIVERED")
    _delivery(session, tenant_a.tenant_id, doc, "PENDING")
    for _ in range(3):
        assert _check(session, tenant_a, doc) is None
    assert _announcements(session, tenant_a.tenant_id, doc) == []


def test_a_dead_delivery_degrades_the_document_and_its_redelivery_makes_it_ready(
    session: Session, tenant_a: TenantContext, tmp_path: Path
) -> None:
    (doc,) = processed_batch(session, tenant_a, [result("9.00", "2026-01-02")], project="dd")
    deliver(session, LocalStorage(tmp_path), tenant_a, doc.id)
    assert _check(session, tenant_a, doc) is None
    dead = _delivery(session, tenant_a.tenant_id, doc, "DEAD")

    change = _check(session, tenant_a, doc)
    assert change is not None
    moved = (change.from_state, change.to_state, change.lagging)
    assert moved == ("READY", "DEGRADED", ["webhooks"])
    assert _check(session, tenant_a, doc) is None  # nothing changed since
    [event] = _announcements(session, tenant_a.tenant_id, doc)
    version = DocumentRepository(session, tenant_a.tenant_id).get(doc.id, fresh=True).version  # type: ignore[union-attr]
    assert event["data"] == {
        "tenant_id": tenant_a.tenant_id,
        "project_id": doc.project_id,
        "batch_id": doc.batch_id,
        "document_id": doc.id,
        "from_state": "READY",
        "to_state": "DEGRADED",
        "lagging": ["webhooks"],
        "projections": {"search": "READY", "webhooks": "DEGRADED"},
        "version": version,
        "link": f"/v1/documents/{doc.id}",
    }
    assert event["subject"] == f"documents/{doc.id}"

    # The redelivery succeeded.
    dead.status = "DELIVERED"
    session.flush()
    change = _check(session, tenant_a, doc)
    assert change is not None
    assert (change.from_state, change.to_state, change.lagging) == ("DEGRADED", "READY", [])
    assert _check(session, tenant_a, doc) is None
    assert _moves(session, tenant_a.tenant_id, doc) == [
        ("READY", "DEGRADED", ["webhooks"]),
        ("DEGRADED", "READY", []),
    ]
    assert _recorded(session, tenant_a.tenant_id, doc) == ("READY", [])


def test_a_delivery_the_reconciler_gives_up_on_degrades_its_document(
    session: Session, tenant_a: TenantContext, tmp_path: Path
) -> None:
    (doc,) = processed_batch(session, tenant_a, [result("9.00", "2026-01-02")], project="gu")
    deliver(session, LocalStorage(tmp_path), tenant_a, doc.id)
    assert _check(session, tenant_a, doc) is None  # READY, recorded silently
    pending = _delivery(session, tenant_a.tenant_id, doc, "PENDING")
    event = session.get(OutboxEvent, (tenant_a.tenant_id, pending.event_id))
    assert event is not None
    letter = webhook_steps.give_up(
        session,
        tenant_a.tenant_id,
        endpoint_id=pending.endpoint_id,
        event=envelope_of(event).to_dict(),
        error="the workflow webhooks.deliver failed after 3 rewinds (IntegrityError)",
        workflow_id="wf-given-up",
        lag_seconds=LAG,
        now=utcnow(),
    )
    assert letter is not None and pending.status == "DEAD"
    # Checked in the same transaction, as a delivery dying after its last attempt is.
    assert _moves(session, tenant_a.tenant_id, doc) == [("READY", "DEGRADED", ["webhooks"])]
    assert _recorded(session, tenant_a.tenant_id, doc) == ("DEGRADED", ["webhooks"])


def test_a_dead_announcement_does_not_degrade_the_document_it_announced(
    session: Session, tenant_a: TenantContext, tmp_path: Path
) -> None:
    (doc,) = processed_batch(session, tenant_a, [result("9.00", "2026-01-02")], project="lp")
    deliver(session, LocalStorage(tmp_path), tenant_a, doc.id)
    dead = _delivery(session, tenant_a.tenant_id, doc, "DEAD")
    assert _check(session, tenant_a, doc) is not None  # first state: DEGRADED, announced
    # The endpoint that lost the outcome event loses the announcement too: no new change.
    [degraded] = _announcements(session, tenant_a.tenant_id, doc)
    _delivery(session, tenant_a.tenant_id, doc, "DEAD", of=degraded)
    assert _check(session, tenant_a, doc) is None
    dead.status = "DELIVERED"
    session.flush()
    assert _check(session, tenant_a, doc) is not None  # DEGRADED -> READY
    # Its announcement dies as well, or stays pending past the lag: the document stays READY.
    ready = _announcements(session, tenant_a.tenant_id, doc)[-1]
    _delivery(session, tenant_a.tenant_id, doc, "DEAD", of=ready)
    _delivery(session, tenant_a.tenant_id, doc, "PENDING", age=LAG * 5, of=ready)
    for _ in range(3):
        assert _check(session, tenant_a, doc) is None
    assert _moves(session, tenant_a.tenant_id, doc) == [
        (None, "DEGRADED", ["webhooks"]),
        ("DEGRADED", "READY", []),
    ]


def _committed_documents(
    session_factory: sessionmaker[Session], count: int, *, changed_at: datetime | None = None
) -> tuple[str, list[Document]]:
    """A committed tenant with `count` SUCCEEDED documents, last changed at `changed_at`."""
    with session_factory() as session, session.begin():
        tenant_id = tenants.create_tenant(session, name=f"ds {secrets.token_hex(3)}").id
        context = TenantContext(tenant_id=tenant_id, scopes=("*",))
        docs = processed_batch(
            session,
            context,
            [result(f"{i}.00", "2026-01-02") for i in range(count)],
            project=f"p {secrets.token_hex(3)}",
        )
        if changed_at is not None:
            repo = DocumentRepository(session, tenant_id)
            for doc in docs:
                fresh = repo.get(doc.id, fresh=True)
                assert fresh is not None
                assert repo.compare_and_set(
                    doc.id, expected_version=fresh.version, updated_at=changed_at
                )
    return tenant_id, docs


def test_the_periodic_pass_announces_lag_past_the_setting_a_bounded_number_per_tick(
    engine: Engine, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    writes = make_write_session_factory(engine)
    # Changed long ago and never projected: a window of that time holds these documents only.
    changed = datetime(2001, 1, 1, 0, 0, 30, tzinfo=UTC)
    tick = changed + timedelta(seconds=LAG + 1)
    tenant_id, docs = _committed_documents(session_factory, 3, changed_at=changed)

    def run(limit: int, at: datetime = tick) -> int:
        return downstream_pass(writes, lag_seconds=LAG, window_seconds=60, tick=at, limit=limit)

    # Not yet past the setting at an earlier tick; then two per tick, the third on the next.
    assert run(10, at=changed + timedelta(seconds=LAG - 1)) == 0
    assert run(2) == 2
    assert run(2) == 1
    assert run(2) == 0  # all DEGRADED already: nothing changes, nothing is announced
    with session_factory() as session:
        for doc in docs:
            assert _moves(session, tenant_id, doc) == [(None, "DEGRADED", ["search"])]
    # A tick whose window has passed them does not look at them again.
    assert run(10, at=tick + timedelta(seconds=3600)) == 0

    # The search entry is written at last: the consumer's check makes it READY.
    with writes() as session, session.begin():
        context = TenantContext(tenant_id=tenant_id, scopes=("*",))
        deliver(session, LocalStorage(tmp_path), context, docs[0].id)
        change = _check(session, context, docs[0])
    assert change is not None
    assert (change.from_state, change.to_state) == ("DEGRADED", "READY")


def test_the_periodic_pass_announces_a_delivery_pending_past_the_setting(
    engine: Engine, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    writes = make_write_session_factory(engine)
    tenant_id, (doc,) = _committed_documents(session_factory, 1)
    context = TenantContext(tenant_id=tenant_id, scopes=("*",))
    with writes() as session, session.begin():
        deliver(session, LocalStorage(tmp_path), context, doc.id)
        assert _check(session, context, doc) is None  # READY, recorded silently
        pending = _delivery(session, tenant_id, doc, "PENDING", age=LAG + 10)
        created = pending.created_at
    tick = created + timedelta(seconds=LAG + 1)
    assert downstream_pass(writes, lag_seconds=LAG, window_seconds=60, tick=tick, limit=500) >= 1
    assert downstream_pass(writes, lag_seconds=LAG, window_seconds=60, tick=tick, limit=500) == 0
    with session_factory() as session:
        assert _moves(session, tenant_id, doc) == [("READY", "DEGRADED", ["webhooks"])]


def _race(writes: sessionmaker[Session], tenant_id: str, doc: Document, checkers: int) -> list[Any]:
    barrier = threading.Barrier(checkers)

    def check(_: int) -> Any:
        with writes() as session, session.begin():
            barrier.wait()
            return announce(session, tenant_id, doc.id, lag_seconds=LAG, now=utcnow())

    with ThreadPoolExecutor(max_workers=checkers) as pool:
        return [c for c in pool.map(check, range(checkers)) if c is not None]


def test_concurrent_checks_announce_each_change_once(
    engine: Engine, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    writes = make_write_session_factory(engine)
    tenant_id, (first, second) = _committed_documents(session_factory, 2)
    context = TenantContext(tenant_id=tenant_id, scopes=("*",))
    with writes() as session, session.begin():
        for doc in (first, second):
            deliver(session, LocalStorage(tmp_path), context, doc.id)
        assert _check(session, context, first) is None  # READY recorded
        dead = {d.id: _delivery(session, tenant_id, d, "DEAD").id for d in (first, second)}

    # A recorded READY moved by compare-and-set, and a first state inserted, by 6 at once.
    assert len(_race(writes, tenant_id, first, 6)) == 1
    assert len(_race(writes, tenant_id, second, 6)) == 1
    with writes() as session, session.begin():
        bind_tenant(session, tenant_id)
        for delivery_id in dead.values():
            row = session.scalars(
                select(WebhookDelivery).where(
                    WebhookDelivery.tenant_id == tenant_id, WebhookDelivery.id == delivery_id
                )
            ).one()
            row.status = "DELIVERED"
    assert len(_race(writes, tenant_id, first, 6)) == 1
    assert _race(writes, tenant_id, first, 6) == []  # nothing changed any more
    with session_factory() as session:
        assert _moves(session, tenant_id, first) == [
            ("READY", "DEGRADED", ["webhooks"]),
            ("DEGRADED", "READY", []),
        ]
        assert _moves(session, tenant_id, second) == [(None, "DEGRADED", ["webhooks"])]
