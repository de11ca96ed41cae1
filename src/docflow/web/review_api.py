"""The console's review screen: the queue of documents awaiting review, claiming the next one,
the review form over the document's pages (values typed, or picked from the page's words), and
approving or rejecting with a reason. Every change goes through the review service and its
claims, exactly as `POST /v1/documents/{id}/review` does; it needs the `review` scope (a
reviewer or an admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from docflow.config import Settings
from docflow.documents import service as documents_service
from docflow.documents.models import DocumentStatus
from docflow.documents.schemas import DocumentRead
from docflow.errors import DomainError, InvalidInput
from docflow.http.deps import SessionDep, SettingsDep, StorageDep
from docflow.kit.clock import utcnow
from docflow.kit.inputs import unstorable
from docflow.review import claims
from docflow.review import service as review_service
from docflow.storage.base import Storage
from docflow.web.auth_api import PREFIX, Member, MemberDep, TemplatesDep, page
from docflow.web.documents_api import document_context

router = APIRouter(include_in_schema=False)

REVIEW_SCOPE = "review"
QUEUE_SHOWN = 50
FIELD_PREFIX = "field."


@router.get("/review", response_class=HTMLResponse)
def queue_page(
    request: Request,
    member: MemberDep,
    session: SessionDep,
    templates: TemplatesDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    empty: Annotated[bool, Query()] = False,
) -> Response:
    """The documents awaiting review, the longest-waiting first (`empty`: the last claim
    found none left)."""
    found = documents_service.list_documents_by_status(
        session,
        member.tenant,
        status=DocumentStatus.REVIEW_REQUIRED.value,
        cursor=cursor,
        limit=QUEUE_SHOWN,
    )
    return page(
        templates,
        request,
        "queue.html",
        member,
        documents=[DocumentRead.model_validate(d) for d in found.items],
        next_cursor=found.next_cursor,
        empty=empty,
    )


@router.post("/review/next")
def claim_next(member: MemberDep, session: SessionDep, settings: SettingsDep) -> Response:
    """Claim the document waiting longest and open it for review (the queue when none)."""
    member.require(REVIEW_SCOPE)
    claimed = claims.next_document(
        session,
        member.tenant,
        reviewer=member.tenant.actor,
        project_id=None,
        now=utcnow(),
        lease_seconds=settings.review_claim_seconds,
    )
    if claimed is None:
        return RedirectResponse(f"{PREFIX}/review?empty=1", status_code=303)
    return RedirectResponse(f"{PREFIX}/review/{claimed.document.id}", status_code=303)


@router.get("/review/{document_id}", response_class=HTMLResponse)
def review_page(
    document_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    templates: TemplatesDep,
) -> Response:
    """The review form of a document (editable while the member holds its claim)."""
    member.require(REVIEW_SCOPE)
    context = document_context(session, member, storage, document_id, settings.max_document_bytes)
    return page(templates, request, "document.html", member, reviewing=True, **context)


@router.post("/review/{document_id}/claim")
def claim(
    document_id: str, member: MemberDep, session: SessionDep, settings: SettingsDep
) -> Response:
    """Claim (or renew the claim on) the document, then its review form."""
    member.require(REVIEW_SCOPE)
    claims.claim_document(
        session,
        member.tenant,
        document_id=document_id,
        reviewer=member.tenant.actor,
        now=utcnow(),
        lease_seconds=settings.review_claim_seconds,
    )
    return RedirectResponse(f"{PREFIX}/review/{document_id}", status_code=303)


@router.post("/review/{document_id}", response_class=HTMLResponse)
async def submit_review(
    document_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    templates: TemplatesDep,
) -> Response:
    """Approve or reject the document with the values of the form (`field.<name>`)."""
    member.require(REVIEW_SCOPE)
    form = await request.form()
    values = {
        key[len(FIELD_PREFIX) :]: str(value)
        for key, value in form.multi_items()
        if key.startswith(FIELD_PREFIX) and isinstance(value, str)
    }
    for key, value in form.multi_items():
        if isinstance(value, str) and unstorable(f"{key}{value}"):
            raise InvalidInput("a value holds a NUL or an unpaired surrogate", field=key)
    review = review_service.ReviewInput(
        values, str(form.get("decision") or ""), str(form.get("reason") or "")
    )
    error = await run_in_threadpool(
        _decide, session, member, storage, settings, document_id, review
    )
    if error is not None:
        context = await run_in_threadpool(
            document_context, session, member, storage, document_id, settings.max_document_bytes
        )
        return page(
            templates,
            request,
            "document.html",
            member,
            status_code=error.status,
            reviewing=True,
            error=str(error),
            error_field=(error.field or "").removeprefix("fields."),
            sent=values,
            **context,
        )
    batch_id = (
        await run_in_threadpool(
            documents_service.get_document, session, member.tenant, document_id=document_id
        )
    ).batch_id
    return RedirectResponse(f"{PREFIX}/batches/{batch_id}?reviewed={document_id}", status_code=303)


def _decide(
    session: Session,
    member: Member,
    storage: Storage,
    settings: Settings,
    document_id: str,
    review: review_service.ReviewInput,
) -> DomainError | None:
    """Record the review; the domain error that refused it, with nothing written, otherwise."""
    try:
        with session.begin_nested():
            review_service.review_document(
                session,
                member.tenant,
                storage,
                document_id=document_id,
                reviewer=member.tenant.actor,
                review=review,
                now=utcnow(),
                max_result_bytes=settings.max_document_bytes,
            )
    except DomainError as refused:
        if refused.status == 404:
            raise
        return refused
    return None


@router.post("/review/{document_id}/release")
def release(document_id: str, member: MemberDep, session: SessionDep) -> Response:
    """Give the document back to the queue (release the member's claim), then the queue."""
    member.require(REVIEW_SCOPE)
    claims.release_claim(
        session, member.tenant, document_id=document_id, reviewer=member.tenant.actor, now=utcnow()
    )
    return RedirectResponse(f"{PREFIX}/review", status_code=303)


@router.post("/review/{document_id}/skip")
def skip(
    document_id: str, member: MemberDep, session: SessionDep, settings: SettingsDep
) -> Response:
    """Leave this document to others and open the next one: the next is claimed while this
    one's claim still holds (so it is not handed back at once), then this claim is released."""
    member.require(REVIEW_SCOPE)
    now = utcnow()
    claimed = claims.next_document(
        session,
        member.tenant,
        reviewer=member.tenant.actor,
        project_id=None,
        now=now,
        lease_seconds=settings.review_claim_seconds,
    )
    claims.release_claim(
        session, member.tenant, document_id=document_id, reviewer=member.tenant.actor, now=now
    )
    if claimed is None:
        return RedirectResponse(f"{PREFIX}/review?empty=1", status_code=303)
    return RedirectResponse(f"{PREFIX}/review/{claimed.document.id}", status_code=303)
