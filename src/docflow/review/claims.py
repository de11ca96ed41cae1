"""Reviewers' claims: a lease on a document, so two reviewers never work on one document, and
the queue that hands out the document waiting longest.

A claim lasts `lease_seconds` from when it was taken (or renewed by claiming again) and expires
by itself: its end is compared with the time at each read, so no sweeper is needed. Every claim
change (and every review, see `service`) first locks the document's row, so they serialise per
document on both engines. A document may be claimed while it awaits review (REVIEW_REQUIRED) and
once reviewed (to review it again).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy.orm import Session

from docflow.documents.models import Document, DocumentStatus
from docflow.documents.service import get_document, lock_document
from docflow.errors import Conflict
from docflow.review.models import ReviewClaim
from docflow.review.repository import ReviewRepository
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

# How many claimed candidates `next_document` passes over before it says the queue is empty.
_NEXT_ATTEMPTS = 20


class ReviewConflict(Conflict):
    """The review state forbids the change; `code` says why: `not_in_review`,
    `claim_required`, `claimed_by_other`, `claim_expired`."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


def reviewable(document: Document) -> bool:
    """Awaiting review, or reviewed already (a re-review)."""
    return document.status == DocumentStatus.REVIEW_REQUIRED or document.reviewed_at is not None


def locked(session: Session, tenant: TenantContext, document_id: str) -> Document:
    document = lock_document(session, tenant, document_id=document_id)
    if not reviewable(document):
        raise ReviewConflict(
            "not_in_review", f"the document is {document.status}, not awaiting review"
        )
    return document


def _take(
    repo: ReviewRepository,
    document_id: str,
    *,
    reviewer: str,
    now: datetime,
    lease_seconds: int,
) -> ReviewClaim | None:
    """The claim, taken or renewed for `reviewer`; None when someone else holds it."""
    claim = repo.claim(document_id)
    expires_at = now + timedelta(seconds=lease_seconds)
    if claim is None:
        claim = ReviewClaim(
            tenant_id=repo.tenant_id,
            document_id=document_id,
            reviewer=reviewer,
            claimed_at=now,
            expires_at=expires_at,
        )
        repo.add_claim(claim)
        return claim
    if claim.reviewer != reviewer and claim.active(now):
        return None
    if claim.reviewer != reviewer or not claim.active(now):
        claim.claimed_at = now
    claim.reviewer, claim.expires_at = reviewer, expires_at
    repo.session.flush()
    return claim


def claim_document(
    session: Session,
    tenant: TenantContext,
    *,
    document_id: str,
    reviewer: str,
    now: datetime,
    lease_seconds: int,
) -> ReviewClaim:
    """Claim a document for `reviewer` until `now + lease_seconds` (renewing their own claim).
    NotFound for a missing id or another tenant's; 409 `not_in_review`, `claimed_by_other`."""
    locked(session, tenant, document_id)
    repo = ReviewRepository(session, tenant.tenant_id)
    claim = _take(repo, document_id, reviewer=reviewer, now=now, lease_seconds=lease_seconds)
    if claim is None:
        raise ReviewConflict("claimed_by_other", "another reviewer holds this document")
    log.info("review.claimed", tenant_id=tenant.tenant_id, document_id=document_id)
    return claim


def release_claim(
    session: Session, tenant: TenantContext, *, document_id: str, reviewer: str, now: datetime
) -> None:
    """Give up `reviewer`'s claim on a document (nothing to do when none is held; an expired
    claim of anyone is dropped too). 409 `claimed_by_other` for someone else's active claim."""
    lock_document(session, tenant, document_id=document_id)
    repo = ReviewRepository(session, tenant.tenant_id)
    claim = repo.claim(document_id)
    if claim is None:
        return
    if claim.reviewer != reviewer and claim.active(now):
        raise ReviewConflict("claimed_by_other", "another reviewer holds this document")
    repo.drop_claim(document_id)
    log.info("review.released", tenant_id=tenant.tenant_id, document_id=document_id)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A document and the claim just taken on it."""

    document: Document
    claim: ReviewClaim


def next_document(
    session: Session,
    tenant: TenantContext,
    *,
    reviewer: str,
    project_id: str | None,
    now: datetime,
    lease_seconds: int,
) -> Claimed | None:
    """Claim and return the document that has awaited review longest with no active claim
    (of `project_id` only, when given); None when there is none. Concurrent callers never get
    the same document (see `ReviewRepository.next_unclaimed`): each candidate's claim is read
    again once the candidate is locked, and one claimed meanwhile is passed over."""
    repo = ReviewRepository(session, tenant.tenant_id)
    passed: list[str] = []
    for _ in range(_NEXT_ATTEMPTS):
        document = repo.next_unclaimed(project_id=project_id, now=now, skip=passed)
        if document is None:
            return None
        claim = _take(repo, document.id, reviewer=reviewer, now=now, lease_seconds=lease_seconds)
        if claim is not None:
            log.info("review.claimed", tenant_id=tenant.tenant_id, document_id=document.id)
            return Claimed(document, claim)
        passed.append(document.id)
    return None


def check_claim(repo: ReviewRepository, document_id: str, reviewer: str, now: datetime) -> None:
    claim = repo.claim(document_id)
    if claim is not None and claim.reviewer == reviewer:
        if not claim.active(now):
            raise ReviewConflict("claim_expired", "your claim on this document has expired")
        return
    if claim is not None and claim.active(now):
        raise ReviewConflict("claimed_by_other", "another reviewer holds this document")
    raise ReviewConflict("claim_required", "claim the document before reviewing it")


def current_claim(
    session: Session, tenant: TenantContext, *, document_id: str, now: datetime
) -> ReviewClaim | None:
    """The document's active claim, if any. NotFound for a missing id or another tenant's."""
    get_document(session, tenant, document_id=document_id)
    claim = ReviewRepository(session, tenant.tenant_id).claim(document_id)
    return claim if claim is not None and claim.active(now) else None
