"""A document's `downstream` state from its search entry, on the database under test: PENDING
while the entry trails the document within the lag setting, DEGRADED naming `search` past it,
READY once the entry holds the document's version; a document in flight owes nothing; and the
document reads (one and a page) carry it, for the tenant's own documents only."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Settings
from docflow.documents.downstream import downstream_of
from docflow.documents.models import Document
from docflow.documents.repository import DocumentRepository
from docflow.documents.schemas import Downstream
from docflow.events import envelopes
from docflow.events.outbox import emit
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.readiness import Degraded
from docflow.search.health import RECENT_CHANGES, downstream_check
from docflow.search.repository import lagging_entries
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from docflow.webhooks.models import DELIVERY_PREFIX, ENDPOINT_PREFIX, WebhookDelivery
from search.helpers import deliver, finish, processed_batch, result
from support.api_fixtures import ApiTenant, ok

LAG = 60.0


def _state(session: Session, tenant: TenantContext, document: Document, *, later: float = 0.0):
    fresh = DocumentRepository(session, tenant.tenant_id).get(document.id, fresh=True)
    assert fresh is not None
    now = utcnow() + timedelta(seconds=later)
    states = downstream_of(session, tenant.tenant_id, [fresh], lag_seconds=LAG, now=now)
    return states[document.id]


def _summary(state: Downstream) -> tuple[str, str, int | None, list[str]]:
    search = state.projections["search"]
    return state.state.value, search.state.value, search.version, state.lagging


def test_a_document_is_pending_then_degraded_until_its_entry_holds_its_version(
    session: Session, tenant_a: TenantContext, tmp_path: Path
) -> None:
    (doc,) = processed_batch(session, tenant_a, [result("9.00", "2026-01-02")], project="ds")
    version = DocumentRepository(session, tenant_a.tenant_id).get(doc.id, fresh=True).version  # type: ignore[union-attr]
    # No entry yet: pending within the lag, degraded past it.
    assert _summary(_state(session, tenant_a, doc)) == ("PENDING", "PENDING", None, ["search"])
    late = _state(session, tenant_a, doc, later=LAG + 1)
    assert _summary(late) == ("DEGRADED", "DEGRADED", None, ["search"])

    deliver(session, LocalStorage(tmp_path), tenant_a, doc.id)
    assert _summary(_state(session, tenant_a, doc)) == ("READY", "READY", version, [])
    assert _summary(_state(session, tenant_a, doc, later=LAG * 10)) == (
        "READY",
        "READY",
        version,
        [],
    )

    # The document changes again: its entry trails by one version until the event is handled.
    newer = finish(session, tenant_a, doc, "REVIEW_REQUIRED", result("9.50", "2026-01-02"))
    assert _summary(_state(session, tenant_a, doc)) == ("PENDING", "PENDING", version, ["search"])
    late = _state(session, tenant_a, doc, later=LAG + 1)
    assert _summary(late) == ("DEGRADED", "DEGRADED", version, ["search"])
    deliver(session, LocalStorage(tmp_path), tenant_a, doc.id)
    assert _summary(_state(session, tenant_a, doc, later=LAG + 1)) == (
        "READY",
        "READY",
        newer,
        [],
    )


def test_a_document_in_flight_owes_nothing_downstream(
    session: Session, tenant_a: TenantContext
) -> None:
    (doc,) = processed_batch(session, tenant_a, [result("1.00", "2026-01-02")], project="dsf")
    repo = DocumentRepository(session, tenant_a.tenant_id)
    fresh = repo.get(doc.id, fresh=True)
    assert fresh is not None
    assert repo.compare_and_set(
        doc.id, expected_version=fresh.version, status="PROCESSING", updated_at=utcnow()
    )
    session.flush()
    state = _state(session, tenant_a, doc, later=LAG * 10)
    assert _summary(state) == ("READY", "NOT_APPLICABLE", None, [])


def test_the_document_reads_carry_the_downstream_state(
    client: TestClient,
    session_factory: sessionmaker[Session],
    tenant_key_a: ApiTenant,
    tenant_key_b: ApiTenant,
    tmp_path: Path,
) -> None:
    context = TenantContext(tenant_id=tenant_key_a.tenant_id, scopes=("*",))
    with session_factory() as session, session.begin():
        projected, waiting = processed_batch(
            session,
            context,
            [result("5.00", "2026-03-01"), result("6.00", "2026-03-02")],
            project=f"ds {secrets.token_hex(3)}",
        )
        deliver(session, LocalStorage(tmp_path), context, projected.id)
    headers = tenant_key_a.headers
    one = ok(client.get(f"/v1/documents/{projected.id}", headers=headers), 200)
    assert one["downstream"]["state"] == "READY"
    assert one["downstream"]["projections"]["search"]["state"] == "READY"
    assert one["downstream"]["lagging"] == []
    other = ok(client.get(f"/v1/documents/{waiting.id}", headers=headers), 200)
    assert other["downstream"] == {
        "state": "PENDING",
        "projections": {
            "search": {"state": "PENDING", "version": None},
            "webhooks": {"state": "NOT_APPLICABLE", "version": None},
        },
        "lagging": ["search"],
    }
    page = ok(client.get(f"/v1/batches/{projected.batch_id}/documents", headers=headers), 200)
    states = {d["id"]: d["downstream"]["state"] for d in page["items"]}
    assert states == {projected.id: "READY", waiting.id: "PENDING"}
    queried = ok(
        client.get("/v1/documents", params={"batch_id": projected.batch_id}, headers=headers),
        200,
    )
    assert {d["id"]: d["downstream"]["state"] for d in queried["items"]} == states
    # Another tenant neither reads the document nor its state.
    assert (
        client.get(f"/v1/documents/{projected.id}", headers=tenant_key_b.headers).status_code == 404
    )


def _delivery(session: Session, tenant: TenantContext, doc: Document, status: str, age: float):
    event = emit(
        session,
        tenant_id=tenant.tenant_id,
        type=envelopes.DOCUMENT_COMPLETED,
        subject=f"documents/{doc.id}",
        data={"tenant_id": tenant.tenant_id, "document_id": doc.id},
    )
    created = utcnow() - timedelta(seconds=age)
    session.add(
        WebhookDelivery(
            tenant_id=tenant.tenant_id,
            id=ids.new_id(DELIVERY_PREFIX),
            endpoint_id=ids.new_id(ENDPOINT_PREFIX),
            event_id=event.id,
            event_type=event.type,
            status=status,
            created_at=created,
            updated_at=created,
        )
    )
    session.flush()


def _webhooks(state: Downstream) -> tuple[str, str, list[str]]:
    return state.state.value, state.projections["webhooks"].state.value, state.lagging


def test_a_document_s_webhook_deliveries_degrade_it_when_dead_or_late(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext, tmp_path: Path
) -> None:
    docs = processed_batch(
        session,
        tenant_a,
        [result(f"{i}.00", "2026-01-02") for i in range(4)],
        project="dsw",
    )
    for d in docs:
        deliver(session, LocalStorage(tmp_path), tenant_a, d.id)
    delivered, under_way, late, dead = docs
    _delivery(session, tenant_a, delivered, "DELIVERED", 5)
    _delivery(session, tenant_a, delivered, "SKIPPED", 5)
    _delivery(session, tenant_a, under_way, "PENDING", 5)
    _delivery(session, tenant_a, late, "DELIVERED", LAG * 3)
    _delivery(session, tenant_a, late, "PENDING", LAG + 5)
    _delivery(session, tenant_a, dead, "DEAD", 5)
    assert _webhooks(_state(session, tenant_a, delivered)) == ("READY", "READY", [])
    # Under way within the setting: optional, so the document is READY while it is sent.
    assert _webhooks(_state(session, tenant_a, under_way)) == ("READY", "PENDING", ["webhooks"])
    assert _webhooks(_state(session, tenant_a, late)) == ("DEGRADED", "DEGRADED", ["webhooks"])
    assert _webhooks(_state(session, tenant_a, dead)) == ("DEGRADED", "DEGRADED", ["webhooks"])
    # Another tenant's dead delivery of an event about the same subject is not this document's.
    _delivery(session, tenant_b, delivered, "DEAD", 5)
    assert _webhooks(_state(session, tenant_a, delivered)) == ("READY", "READY", [])


def test_readyz_is_degraded_while_a_document_s_entry_lags_past_the_setting(
    engine: Engine,
    session_factory: sessionmaker[Session],
    tenant_key_a: ApiTenant,
    tmp_path: Path,
) -> None:
    settings = Settings(downstream_lag_seconds=LAG)
    check = downstream_check(engine, settings)
    before = utcnow() - timedelta(seconds=LAG)

    def lagging() -> int:
        with session_factory() as session:
            return lagging_entries(session, before=before, limit=RECENT_CHANGES)

    baseline = lagging()
    context = TenantContext(tenant_id=tenant_key_a.tenant_id, scopes=("*",))
    with session_factory() as session, session.begin():
        (doc,) = processed_batch(
            session, context, [result("3.00", "2026-04-01")], project=f"rz {secrets.token_hex(3)}"
        )
        repo = DocumentRepository(session, context.tenant_id)
        fresh = repo.get(doc.id, fresh=True)
        assert fresh is not None
        # Changed two minutes ago, never projected: past the lag.
        assert repo.compare_and_set(
            doc.id, expected_version=fresh.version, updated_at=before - timedelta(seconds=60)
        )
    assert lagging() == baseline + 1
    with pytest.raises(Degraded, match="search entries lag"):
        check()
    with session_factory() as session, session.begin():
        deliver(session, LocalStorage(tmp_path), context, doc.id)
    assert lagging() == baseline
    if baseline == 0:
        check()
