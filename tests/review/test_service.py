"""Review through the real database: claims and their expiry, decisions with corrected values,
the batch's counts and status, the audit trail and the events."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from docflow.batches.service import get_batch
from docflow.documents import service as documents
from docflow.errors import InvalidInput, NotFound
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.kit.clock import utcnow
from docflow.review import claims, service
from docflow.review.claims import ReviewConflict
from docflow.review.service import ReviewInput
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from support.review_fixtures import reviewable_batch

LEASE = 900


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path)


def _claim(session: Session, tenant: TenantContext, document_id: str, who: str, **kw: Any) -> Any:
    return claims.claim_document(
        session,
        tenant,
        document_id=document_id,
        reviewer=who,
        now=kw.get("now", utcnow()),
        lease_seconds=kw.get("lease", LEASE),
    )


def _review(
    session: Session,
    tenant: TenantContext,
    storage: LocalStorage,
    document_id: str,
    who: str,
    review: ReviewInput,
    now: Any = None,
) -> service.Recorded:
    return service.review_document(
        session,
        tenant,
        storage,
        document_id=document_id,
        reviewer=who,
        review=review,
        now=now or utcnow(),
        max_result_bytes=1_000_000,
    )


def _code(exc: pytest.ExceptionInfo[ReviewConflict]) -> str:
    return exc.value.code


def _events(session: Session, tenant: TenantContext, type_: str) -> list[OutboxEvent]:
    stmt = select(OutboxEvent).where(
        OutboxEvent.tenant_id == tenant.tenant_id, OutboxEvent.type == type_
    )
    return list(session.scalars(stmt.order_by(OutboxEvent.id)))


def test_a_claim_is_the_callers_until_it_expires(session: Session, tenant_a: TenantContext) -> None:
    document = reviewable_batch(session, tenant_a, review=1).documents[0]
    now = utcnow()
    claim = _claim(session, tenant_a, document.id, "alice", now=now)
    assert (claim.reviewer, claim.expires_at) == ("alice", now + timedelta(seconds=LEASE))
    with pytest.raises(ReviewConflict) as taken:
        _claim(session, tenant_a, document.id, "bob", now=now + timedelta(seconds=LEASE - 1))
    assert _code(taken) == "claimed_by_other"
    renewed = _claim(session, tenant_a, document.id, "alice", now=now + timedelta(seconds=60))
    assert renewed.expires_at == now + timedelta(seconds=LEASE + 60)
    # Once expired, anyone may take it; no sweeper ran.
    later = now + timedelta(seconds=LEASE + 61)
    assert _claim(session, tenant_a, document.id, "bob", now=later).reviewer == "bob"
    with pytest.raises(ReviewConflict) as released:
        claims.release_claim(
            session, tenant_a, document_id=document.id, reviewer="alice", now=later
        )
    assert _code(released) == "claimed_by_other"
    claims.release_claim(session, tenant_a, document_id=document.id, reviewer="bob", now=later)
    assert claims.current_claim(session, tenant_a, document_id=document.id, now=later) is None


def test_only_documents_awaiting_review_are_claimed(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    batch = reviewable_batch(session, tenant_a, review=0, succeeded=1)
    with pytest.raises(ReviewConflict) as refused:
        _claim(session, tenant_a, batch.documents[0].id, "alice")
    assert _code(refused) == "not_in_review"
    awaiting = reviewable_batch(session, tenant_a, review=1).documents[0]
    with pytest.raises(NotFound):
        _claim(session, tenant_b, awaiting.id, "mallory")


def test_a_review_needs_the_callers_live_claim(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    document = reviewable_batch(session, tenant_a, review=1).documents[0]
    approve = ReviewInput({"total": "12.50"}, "approve")
    with pytest.raises(ReviewConflict) as unclaimed:
        _review(session, tenant_a, storage, document.id, "alice", approve)
    assert _code(unclaimed) == "claim_required"
    now = utcnow()
    _claim(session, tenant_a, document.id, "bob", now=now)
    with pytest.raises(ReviewConflict) as other:
        _review(session, tenant_a, storage, document.id, "alice", approve, now=now)
    assert _code(other) == "claimed_by_other"
    late = now + timedelta(seconds=LEASE)
    with pytest.raises(ReviewConflict) as expired:
        _review(session, tenant_a, storage, document.id, "bob", approve, now=late)
    assert _code(expired) == "claim_expired"
    with pytest.raises(ReviewConflict) as stale:
        _review(session, tenant_a, storage, document.id, "alice", approve, now=late)
    assert _code(stale) == "claim_required"
    assert documents.get_document(session, tenant_a, document_id=document.id).reviewed_at is None


@pytest.mark.parametrize(
    ("fields", "decision", "reason", "field"),
    [
        ({"total": "twelve"}, "approve", "", "fields.total"),
        ({"colour": "red"}, "approve", "", "fields.colour"),
        ({"total": "9" * 3000}, "approve", "", "fields.total"),
        ({}, "approve", "", "fields.total"),  # a required field still has no value
        ({"total": None}, "approve", "", "fields.total"),
        ({}, "reject", "  ", "reason"),
        ({}, "maybe", "", "decision"),
    ],
)
def test_bad_corrections_name_the_field(
    session: Session,
    tenant_a: TenantContext,
    storage: LocalStorage,
    fields: dict[str, str | None],
    decision: str,
    reason: str,
    field: str,
) -> None:
    document = reviewable_batch(session, tenant_a, review=1).documents[0]
    _claim(session, tenant_a, document.id, "alice")
    with pytest.raises(InvalidInput) as bad:
        _review(
            session, tenant_a, storage, document.id, "alice", ReviewInput(fields, decision, reason)
        )
    assert bad.value.field == field
    assert documents.get_document(session, tenant_a, document_id=document.id).status == (
        "REVIEW_REQUIRED"
    )


def test_approving_corrects_the_result_keeps_the_original_and_completes_the_batch(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = reviewable_batch(session, tenant_a, review=1, succeeded=1)
    document = batch.documents[0]
    _claim(session, tenant_a, document.id, "alice")
    recorded = _review(
        session,
        tenant_a,
        storage,
        document.id,
        "alice",
        ReviewInput({"total": "$12.5"}, "approve", "read the receipt"),
    )
    session.expire_all()
    after = documents.get_document(session, tenant_a, document_id=document.id)
    assert (after.status, after.error_code) == ("SUCCEEDED", None)
    assert after.reviewed_at is not None and after.result is not None
    assert after.result["reviewed"] is True
    total = after.result["fields"]["total"]
    assert (total["value"], total["confidence"], total["raw"]) == ("12.50", 1.0, "12.5O")
    assert after.result["fields"]["invoice_number"]["value"] == "INV-1"
    [field] = recorded.fields
    assert (field.field, field.original_value, field.original_confidence) == ("total", None, 0.6)
    assert field.corrected_value == "12.50"
    assert (recorded.review.reviewer, recorded.review.reason) == ("alice", "read the receipt")
    # The batch's counts and status follow, announced once.
    session.expire_all()
    counted = get_batch(session, tenant_a, batch_id=batch.id)
    assert (counted.status, counted.succeeded_count, counted.review_count) == ("SUCCEEDED", 2, 0)
    [completed] = _events(session, tenant_a, envelopes.BATCH_COMPLETED)
    assert completed.data["status"] == "SUCCEEDED"
    [reviewed] = _events(session, tenant_a, envelopes.DOCUMENT_REVIEWED)
    assert reviewed.data["decision"] == "approve" and reviewed.data["corrected_fields"] == ["total"]
    assert reviewed.data["reviewer"] == "alice" and reviewed.data["version"] == after.version
    body = {
        "specversion": "1.0",
        "id": reviewed.id,
        "source": reviewed.source,
        "type": reviewed.type,
        "time": "2026-12-01T00:00:00Z",
        "subject": reviewed.subject,
        "datacontenttype": "application/json",
        "data": reviewed.data,
    }
    jsonschema.validate(body, envelopes.schema_for(envelopes.DOCUMENT_REVIEWED))
    # The review released the claim.
    assert claims.current_claim(session, tenant_a, document_id=document.id, now=utcnow()) is None


def test_a_value_sent_as_it_stands_is_no_correction(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    """A form sends every field: those equal to the stored value (once parsed) are neither
    rewritten nor audited, nor announced as corrected."""
    document = reviewable_batch(session, tenant_a, review=1).documents[0]
    _claim(session, tenant_a, document.id, "alice")
    recorded = _review(
        session,
        tenant_a,
        storage,
        document.id,
        "alice",
        ReviewInput({"invoice_number": "INV-1", "total": "12.5"}, "approve"),
    )
    assert [(f.field, f.original_value, f.corrected_value) for f in recorded.fields] == [
        ("total", None, "12.50")
    ]
    session.expire_all()
    after = documents.get_document(session, tenant_a, document_id=document.id)
    assert after.result is not None
    unchanged = after.result["fields"]["invoice_number"]
    assert (unchanged["value"], unchanged["confidence"]) == ("INV-1", 0.97)
    assert "reviewed" not in unchanged
    [reviewed] = _events(session, tenant_a, envelopes.DOCUMENT_REVIEWED)
    assert reviewed.data["corrected_fields"] == ["total"]
    # Re-review sending the values as they now stand: no correction at all.
    _claim(session, tenant_a, document.id, "bob")
    again = _review(
        session,
        tenant_a,
        storage,
        document.id,
        "bob",
        ReviewInput({"invoice_number": "INV-1", "total": "12.50"}, "approve"),
    )
    assert again.fields == []


def test_rejecting_fails_the_document_and_re_review_is_audited(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = reviewable_batch(session, tenant_a, review=2)
    first, second = batch.documents
    _claim(session, tenant_a, first.id, "alice")
    _review(session, tenant_a, storage, first.id, "alice", ReviewInput({}, "reject", "a menu"))
    session.expire_all()
    rejected = documents.get_document(session, tenant_a, document_id=first.id)
    assert (rejected.status, rejected.error_code) == ("FAILED", "rejected_in_review")
    assert rejected.error_reason == "a menu"
    session.expire_all()
    # One failed of two: past the tolerated 10 %, but one still awaits review: counts only
    # until the batch's status changes.
    counted = get_batch(session, tenant_a, batch_id=batch.id)
    assert (counted.status, counted.failed_count, counted.review_count) == ("FAILED", 1, 1)
    # Re-review: the rejected document is approved after all, with a correction.
    _claim(session, tenant_a, first.id, "bob")
    _review(session, tenant_a, storage, first.id, "bob", ReviewInput({"total": "7"}, "approve"))
    _claim(session, tenant_a, first.id, "carol")
    _review(
        session, tenant_a, storage, first.id, "carol", ReviewInput({"total": "8.00"}, "approve")
    )
    page = service.list_reviews(session, tenant_a, document_id=first.id, cursor=None, limit=10)
    trail = [
        (r.review.reviewer, r.review.decision, r.review.status_before, r.review.status_after)
        for r in page.items
    ]
    assert trail == [
        ("alice", "reject", "REVIEW_REQUIRED", "FAILED"),
        ("bob", "approve", "FAILED", "SUCCEEDED"),
        ("carol", "approve", "SUCCEEDED", "SUCCEEDED"),
    ]
    changes = [[(f.original_value, f.corrected_value) for f in r.fields] for r in page.items]
    assert changes == [[], [(None, "7.00")], [("7.00", "8.00")]]
    session.expire_all()
    counted = get_batch(session, tenant_a, batch_id=batch.id)
    assert (counted.succeeded_count, counted.failed_count, counted.review_count) == (1, 0, 1)
    assert counted.status == "REVIEW_REQUIRED"
    statuses = [e.data["status"] for e in _events(session, tenant_a, envelopes.BATCH_COMPLETED)]
    assert statuses == ["FAILED", "REVIEW_REQUIRED"]
    assert second.id not in {
        e.data["document_id"] for e in _events(session, tenant_a, envelopes.DOCUMENT_REVIEWED)
    }


def test_the_queue_hands_out_the_longest_waiting_unclaimed_document(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    batch = reviewable_batch(session, tenant_a, review=3)
    ids, project_id = [d.id for d in batch.documents], batch.project_id
    reviewable_batch(session, tenant_b, review=2)
    now = utcnow()

    def take(who: str, project: str | None = None) -> str | None:
        claimed = claims.next_document(
            session,
            tenant_a,
            reviewer=who,
            project_id=project,
            now=now,
            lease_seconds=LEASE,
        )
        return None if claimed is None else claimed.document.id

    _claim(session, tenant_a, ids[0], "carol", now=now)
    assert take("alice") == ids[1]
    assert take("bob", project_id) == ids[2]
    assert take("dave") is None
    assert take("dave", "prj_00000000000000000000000000") is None
