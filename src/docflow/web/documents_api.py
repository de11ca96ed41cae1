"""Console pages of documents: the page images with every extracted field's box drawn on them,
coloured by confidence, the fields' details, the audit trail of reviews; for a reviewer
holding the document's claim, the review form (see `docflow.web.review_api`); and, for a
member who may change data, deleting a document of a finished batch."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, BackgroundTasks, Depends, Form, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from docflow.batches import lifecycle
from docflow.batches import service as batches_service
from docflow.batches.models import TERMINAL_BATCH_STATUSES as TERMINAL
from docflow.config import Settings
from docflow.documents import service as documents_service
from docflow.documents.keys import words_key
from docflow.documents.outcome import batch_facts
from docflow.documents.schemas import DocumentRead
from docflow.extraction import words
from docflow.extraction.definition import FieldType
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import ReadDocument
from docflow.http.deps import EvaluatorDep, SessionDep, SettingsDep, StorageDep
from docflow.kit.clock import utcnow
from docflow.review import service as review_service
from docflow.review.claims import current_claim, reviewable
from docflow.review.models import ReviewClaim
from docflow.storage.base import ObjectNotFound, Storage
from docflow.tenancy import TenantContext
from docflow.web import pages
from docflow.web.auth_api import PREFIX, Member, MemberDep, TemplatesDep, page
from docflow.workflows.evaluation import Evaluator

router = APIRouter(include_in_schema=False)

# The audit trail shows this many reviews of a document.
REVIEWS_SHOWN = 50
PageNumber = Annotated[int, Path(ge=1, le=100_000)]


async def get_cache(request: Request) -> pages.FileCache:
    cache: pages.FileCache = request.app.state.console_cache
    return cache


CacheDep = Annotated[pages.FileCache, Depends(get_cache)]


async def get_limits(request: Request) -> EngineLimits:
    """The extraction engine's limits (what reading or rendering one file may cost)."""
    limits: EngineLimits = request.app.state.console_limits
    return limits


LimitsDep = Annotated[EngineLimits, Depends(get_limits)]


@dataclass(frozen=True, slots=True)
class FieldView:
    """A field as the page shows it: its result and how confident it looks."""

    name: str
    type: str
    required: bool
    value: str | None
    raw: str | None
    confidence: float | None
    page: int | None
    box: tuple[float, float, float, float] | None
    locator: str | None
    reading: str | None
    errors: tuple[str, ...]
    level: str  # "high", "medium" or "low": the workflow's thresholds
    # A language model's value in place of the engine's: what the engine read, shown beside.
    alternative: dict[str, Any] | None = None

    @property
    def editable(self) -> bool:
        return self.type != FieldType.LINE_ITEMS.value


def _level(confidence: float | None, low: float, high: float) -> str:
    if confidence is None or confidence < low:
        return "low"
    return "high" if confidence >= high else "medium"


def field_views(
    session: Session, tenant: TenantContext, document: Any, result: dict[str, Any] | None
) -> list[FieldView]:
    """The workflow's fields in its order, each with what the result holds for it."""
    definition = batch_facts(session, tenant.tenant_id, document.batch_id).definition
    low, high = definition.confidence_threshold, definition.review_threshold
    found: dict[str, Any] = (result or {}).get("fields") or {}
    views = []
    for field in definition.fields:
        got = found.get(field.name) or {}
        box = got.get("box")
        confidence = got.get("confidence")
        if field.type == FieldType.LINE_ITEMS:
            items = ((result or {}).get("line_items") or {}).get(field.name) or {}
            confidence = items.get("confidence")
        views.append(
            FieldView(
                name=field.name,
                type=field.type.value,
                required=field.required,
                value=got.get("value"),
                raw=got.get("raw"),
                confidence=confidence,
                page=got.get("page"),
                box=(box["x0"], box["y0"], box["x1"], box["y1"]) if box else None,
                locator=got.get("locator"),
                reading=got.get("reading"),
                errors=tuple(got.get("errors") or ()),
                level=_level(confidence, low, high),
                alternative=got.get("alternative"),
            )
        )
    return views


def document_context(
    session: Session, member: Member, storage: Storage, document_id: str, max_bytes: int
) -> dict[str, Any]:
    """What the document page (and the review page) render."""
    document = documents_service.get_document(session, member.tenant, document_id=document_id)
    result = documents_service.document_result(storage, document, max_bytes=max_bytes)
    reviews = review_service.list_reviews(
        session, member.tenant, document_id=document_id, cursor=None, limit=REVIEWS_SHOWN
    )
    claim: ReviewClaim | None = current_claim(
        session, member.tenant, document_id=document_id, now=utcnow()
    )
    return {
        "document": DocumentRead.model_validate(document),
        "result": result,
        "fields": field_views(session, member.tenant, document, result),
        "page_count": int((result or {}).get("page_count") or (1 if document.storage_key else 0)),
        "reviews": reviews.items,
        "claim": claim,
        "reviewable": reviewable(document),
        "deletable": batch_status(session, member.tenant, document.batch_id) in TERMINAL,
        "reasons": (result or {}).get("reasons") or [],
    }


def batch_status(session: Session, tenant: TenantContext, batch_id: str) -> str:
    return batches_service.get_batch(session, tenant, batch_id=batch_id).status


@router.post("/documents/{document_id}/delete")
def delete_document(
    document_id: str,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    background: BackgroundTasks,
    confirm: Annotated[Literal["yes"], Form()],
) -> Response:
    """Delete a document of a terminal batch (the `write` scope, as `DELETE
    /v1/documents/{id}`), then show its batch."""
    member.require("write")
    document = documents_service.get_document(session, member.tenant, document_id=document_id)
    keys = lifecycle.delete_document(session, member.tenant, document_id=document_id)
    background.add_task(lifecycle.remove_files, storage, keys)
    return RedirectResponse(f"{PREFIX}/batches/{document.batch_id}", status_code=303)


@router.get("/documents/{document_id}", response_class=HTMLResponse)
def document_page(
    document_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    templates: TemplatesDep,
) -> Response:
    """A document: its pages with the fields' boxes, the fields, the reviews."""
    context = document_context(session, member, storage, document_id, settings.max_document_bytes)
    return page(templates, request, "document.html", member, reviewing=False, **context)


@router.get("/documents/{document_id}/pages/{number}")
def page_image(
    document_id: str,
    number: PageNumber,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    cache: CacheDep,
    limits: LimitsDep,
) -> Response:
    """Page `number` of the document's file as an image (rendered once, then cached)."""
    stored = documents_service.document_file(session, member.tenant, document_id=document_id)

    def render() -> bytes:
        data = storage.read_bytes(stored.key, max_bytes=settings.max_document_bytes)
        return pages.render_page(data, number, limits)[0]

    try:
        image = cache.get_or_make(f"page:{stored.key}:{number}", render)
    except pages.PageNotShown as refused:
        return Response(str(refused), status_code=404, media_type="text/plain")
    return Response(
        image,
        media_type=pages.media_type(image),
        headers={"Cache-Control": "private, max-age=3600"},
    )


@router.get("/documents/{document_id}/words")
async def document_words(
    document_id: str,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    cache: CacheDep,
    evaluator: EvaluatorDep,
) -> Response:
    """Every page's words with their boxes, for picking a value on the page (review)."""
    member.require("review")
    stored = await run_in_threadpool(
        documents_service.document_file, session, member.tenant, document_id=document_id
    )
    try:
        kept = words_key(member.tenant.tenant_id, document_id)
        document = await run_in_threadpool(
            partial(read_sample, kept=kept), stored.key, storage, settings, cache, evaluator
        )
    except pages.PageNotShown as refused:
        return JSONResponse({"pages": [], "error": str(refused)})
    return JSONResponse({"pages": pages.page_words(document)})


def read_sample(
    key: str,
    storage: Storage,
    settings: Settings,
    cache: pages.FileCache,
    evaluator: Evaluator,
    *,
    kept: str | None = None,
) -> ReadDocument:
    """The stored file `key` as the pipeline's readers read it (the words the review and the
    template canvas pick from): the words the engine kept when it processed the document
    (`kept`, its `words_key`, as `GET /v1/documents/{id}/words` answers them) when there are
    some, else read once and then cached; PageNotShown if unreadable."""
    if kept is not None:
        try:
            return words.loaded(storage.read_bytes(kept, max_bytes=settings.max_document_bytes))
        except ObjectNotFound:
            pass  # not processed yet, or by an earlier release: read it here

    def read() -> ReadDocument:
        data = storage.read_bytes(key, max_bytes=settings.max_document_bytes)
        engines = evaluator.engines()
        return pages.read_document(data, engines.ocr, engines.limits)

    return pages.cached_read(cache, f"read:{key}", read)
