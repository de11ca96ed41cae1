"""Review: claims (`/v1/documents/{document_id}/claim`), decisions with corrections
(`/v1/documents/{document_id}/review`), the audit trail (`/v1/documents/{document_id}/reviews`)
and the queue (`/v1/review/next`). Reads need the `read` scope, every change `review` (which a
`write` key holds too)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Settings
from docflow.documents.schemas import DocumentRead
from docflow.errors import Forbidden
from docflow.http.deps import (
    PageDep,
    SessionDep,
    SettingsDep,
    StorageDep,
    TenantDep,
    WriteSessionsDep,
    require_scope,
)
from docflow.http.problems import PROBLEM_MEDIA_TYPE, Problem
from docflow.kit.clock import utcnow
from docflow.review import claims, service
from docflow.review.schemas import (
    ClaimedDocument,
    ClaimRead,
    ReviewCreate,
    ReviewedDocument,
    ReviewList,
    ReviewRead,
)
from docflow.tenancy import TenantContext

REVIEW_SCOPE = "review"

router = APIRouter(tags=["review"], dependencies=[Depends(require_scope(write=REVIEW_SCOPE))])

_CONFLICTS: dict[int | str, dict[str, Any]] = {
    409: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "`not_in_review`, `claim_required`, `claimed_by_other`, "
        "`claim_expired` or `document_changed`",
    }
}


async def _reviewer(tenant: TenantDep) -> TenantContext:
    """The caller, who must hold the `review` scope (for a GET that claims)."""
    if not tenant.has_scope(REVIEW_SCOPE):
        raise Forbidden(f"this API key lacks the {REVIEW_SCOPE!r} scope")
    return tenant


@router.post("/documents/{document_id}/claim", response_model=ClaimRead, responses=_CONFLICTS)
def claim_document(
    document_id: str, session: SessionDep, tenant: TenantDep, settings: SettingsDep
) -> ClaimRead:
    """Claim a document for review for DOCFLOW_REVIEW_CLAIM_SECONDS (again: renew the claim)."""
    claim = claims.claim_document(
        session,
        tenant,
        document_id=document_id,
        reviewer=tenant.actor,
        now=utcnow(),
        lease_seconds=settings.review_claim_seconds,
    )
    return ClaimRead.model_validate(claim)


@router.delete(
    "/documents/{document_id}/claim", status_code=204, response_class=Response, responses=_CONFLICTS
)
def release_claim(document_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    """Release the caller's claim on a document (a no-op when none is held)."""
    claims.release_claim(
        session, tenant, document_id=document_id, reviewer=tenant.actor, now=utcnow()
    )
    return Response(status_code=204)


@router.post(
    "/documents/{document_id}/review", response_model=ReviewedDocument, responses=_CONFLICTS
)
def review_document(
    document_id: str,
    body: ReviewCreate,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    storage: StorageDep,
) -> ReviewedDocument:
    """Approve or reject a document under the caller's claim, with corrected field values."""
    recorded = service.review_document(
        session,
        tenant,
        storage,
        document_id=document_id,
        reviewer=tenant.actor,
        review=service.ReviewInput(body.fields, body.decision, body.reason),
        now=utcnow(),
        max_result_bytes=settings.max_document_bytes,
    )
    document = service.get_reviewed(session, tenant, document_id=document_id)
    return ReviewedDocument(
        document=DocumentRead.model_validate(document), review=ReviewRead.of(recorded)
    )


@router.get("/documents/{document_id}/reviews", response_model=ReviewList)
def list_reviews(
    document_id: str, session: SessionDep, tenant: TenantDep, page: PageDep
) -> ReviewList:
    """List a document's reviews, oldest first, with each corrected field's original value."""
    result = service.list_reviews(
        session, tenant, document_id=document_id, cursor=page.cursor, limit=page.limit
    )
    items = [ReviewRead.of(r) for r in result.items]
    return ReviewList(items=items, next_cursor=result.next_cursor)


Reviewer = Annotated[TenantContext, Depends(_reviewer)]
ProjectFilter = Annotated[
    str | None, Query(max_length=40, description="only this project's documents")
]


@router.post("/review/next", response_model=ClaimedDocument)
def take_next(
    tenant: Reviewer,
    write_sessions: WriteSessionsDep,
    settings: SettingsDep,
    project_id: ProjectFilter = None,
) -> ClaimedDocument:
    """Claim and return the document waiting longest for review (nulls when none is left)."""
    return _next(tenant, write_sessions, settings, project_id)


@router.get("/review/next", response_model=ClaimedDocument)
def next_document(
    tenant: Reviewer,
    write_sessions: WriteSessionsDep,
    settings: SettingsDep,
    project_id: ProjectFilter = None,
) -> ClaimedDocument:
    """Claim and return the next document to review, as POST does (needs the review scope)."""
    return _next(tenant, write_sessions, settings, project_id)


def _next(
    tenant: TenantContext,
    write_sessions: sessionmaker[Session],
    settings: Settings,
    project_id: str | None,
) -> ClaimedDocument:
    # A write transaction of its own, for GET as well: taking the claim writes.
    with write_sessions.begin() as session:
        claimed = claims.next_document(
            session,
            tenant,
            reviewer=tenant.actor,
            project_id=project_id,
            now=utcnow(),
            lease_seconds=settings.review_claim_seconds,
        )
        if claimed is None:
            return ClaimedDocument(document=None, claim=None)
        return ClaimedDocument(
            document=DocumentRead.model_validate(claimed.document),
            claim=ClaimRead.model_validate(claimed.claim),
        )
