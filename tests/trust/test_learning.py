"""Learning from reviews through the real database: a review's document becomes examples of its
workflow version, the estimates follow, a drift is announced, the gate reads the cuts."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from docflow.batches.lifecycle import delete_project
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import envelope_of
from docflow.kit.clock import utcnow
from docflow.review import claims
from docflow.review import service as review
from docflow.review.service import ReviewInput
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from docflow.trust import service
from docflow.trust.models import FieldEvidence, FieldTrust
from support.review_fixtures import reviewable_batch


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path)


def _reviewed(
    session: Session, tenant: TenantContext, storage: LocalStorage, document_id: str, **kw: object
) -> None:
    now = utcnow()
    claims.claim_document(
        session, tenant, document_id=document_id, reviewer="r", now=now, lease_seconds=60
    )
    review.review_document(
        session,
        tenant,
        storage,
        document_id=document_id,
        reviewer="r",
        review=ReviewInput(kw.get("fields", {}), str(kw.get("decision", "approve")), "why"),  # type: ignore[arg-type]
        now=now,
        max_result_bytes=1_000_000,
    )


def _learn(session: Session, tenant: TenantContext, storage: LocalStorage, document_id: str) -> int:
    drifts = service.learn(
        session,
        tenant,
        storage,
        document_id=document_id,
        max_result_bytes=1_000_000,
        now=utcnow(),
    )
    return len(drifts)


def _evidence(session: Session, tenant: TenantContext) -> dict[tuple[str, str], tuple[float, bool]]:
    rows = session.scalars(select(FieldEvidence).where(FieldEvidence.tenant_id == tenant.tenant_id))
    return {(r.document_id, r.field): (r.confidence, r.correct) for r in rows}


def _estimates(session: Session, tenant: TenantContext) -> int:
    rows = session.scalars(select(FieldTrust).where(FieldTrust.tenant_id == tenant.tenant_id))
    return len(list(rows))


def test_an_approved_document_is_one_example_per_field_it_read(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = reviewable_batch(session, tenant_a, review=2)
    confirmed, corrected = (d.id for d in batch.documents)
    # Confirmed as extracted: invoice_number (0.97) is right; total had no value (no example).
    _reviewed(session, tenant_a, storage, confirmed, fields={"total": "12.50"})
    # Corrected: invoice_number was wrong.
    _reviewed(
        session, tenant_a, storage, corrected, fields={"invoice_number": "INV-9", "total": "1"}
    )
    assert _evidence(session, tenant_a) == {}  # nothing on the request path
    _learn(session, tenant_a, storage, confirmed)
    _learn(session, tenant_a, storage, corrected)
    assert _evidence(session, tenant_a) == {
        (confirmed, "invoice_number"): (0.97, True),
        (corrected, "invoice_number"): (0.97, False),
    }
    view = service.trust_view(
        session, tenant_a, workflow_id=batch.workflow_id, version=None, learning=True
    )
    fields = {f.name: f for f in view.fields}
    assert fields["invoice_number"].examples == 2 and fields["invoice_number"].correct == 1
    assert fields["invoice_number"].cut is None
    assert fields["invoice_number"].decided_by == "thresholds"  # cold_start of the fixture
    assert view.target_precision == 0.98 and view.qa_sample_rate == 0.0


def test_a_re_review_keeps_the_engines_confidence_and_a_rejection_leaves_no_example(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    document_id = reviewable_batch(session, tenant_a, review=1).documents[0].id
    _reviewed(session, tenant_a, storage, document_id, fields={"total": "2"})
    _learn(session, tenant_a, storage, document_id)
    # The second review sees the reviewed value (confidence 1): the example keeps 0.97.
    _reviewed(session, tenant_a, storage, document_id, fields={"invoice_number": "INV-7"})
    _learn(session, tenant_a, storage, document_id)
    assert _evidence(session, tenant_a) == {(document_id, "invoice_number"): (0.97, False)}
    _learn(session, tenant_a, storage, document_id)  # a replay changes nothing
    assert len(_evidence(session, tenant_a)) == 1
    _reviewed(session, tenant_a, storage, document_id, decision="reject")
    _learn(session, tenant_a, storage, document_id)
    assert _evidence(session, tenant_a) == {}


def test_enough_right_reviews_earn_a_cut_and_a_drift_takes_it_back(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = reviewable_batch(session, tenant_a, review=75)
    ids = [d.id for d in batch.documents]
    for document_id in ids[:70]:
        _reviewed(session, tenant_a, storage, document_id, fields={"total": "1"})
        _learn(session, tenant_a, storage, document_id)
    cuts = service.field_cuts(
        session, tenant_a, workflow_id=batch.workflow_id, version=batch.workflow_version
    )
    assert cuts["invoice_number"].cut == 0.97 and cuts["invoice_number"].examples == 70
    drifts = 0
    for document_id in ids[70:]:
        _reviewed(
            session, tenant_a, storage, document_id, fields={"invoice_number": "X", "total": "1"}
        )
        drifts += _learn(session, tenant_a, storage, document_id)
    assert drifts == 1  # announced once: the cut moved with it
    row = session.scalars(
        select(FieldTrust).where(
            FieldTrust.tenant_id == tenant_a.tenant_id, FieldTrust.field == "invoice_number"
        )
    ).one()
    assert row.cut is None and row.drifted_at is not None
    events = list(
        session.scalars(
            select(OutboxEvent).where(
                OutboxEvent.tenant_id == tenant_a.tenant_id,
                OutboxEvent.type == envelopes.WORKFLOW_TRUST_DRIFTED,
            )
        )
    )
    assert len(events) == 1
    assert events[0].data["field"] == "invoice_number" and events[0].data["cut"] == 0.97
    body = envelope_of(events[0]).to_dict()
    jsonschema.validate(body, envelopes.schema_for(envelopes.WORKFLOW_TRUST_DRIFTED))


def test_examples_and_estimates_go_with_their_project_and_workflow(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = reviewable_batch(session, tenant_a, review=1)
    document_id = batch.documents[0].id
    _reviewed(session, tenant_a, storage, document_id, fields={"total": "1"})
    _learn(session, tenant_a, storage, document_id)
    assert _evidence(session, tenant_a) and _estimates(session, tenant_a)
    delete_project(session, tenant_a, project_id=batch.project_id, cascade=True)
    session.expire_all()
    assert _evidence(session, tenant_a) == {} and _estimates(session, tenant_a) == 0


def test_a_document_deleted_before_its_review_is_learned_from_teaches_nothing(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    assert _learn(session, tenant_a, storage, "doc_00000000000000000000000000") == 0
    assert _evidence(session, tenant_a) == {}
