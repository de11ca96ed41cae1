"""The console's template canvas: a workflow's template regions drawn as boxes on a sample
document (one of the tenant's), with the words of its pages to pick an anchor from; what each
box extracts, live (`POST .../canvas/preview`, JSON); and publishing the boxes as the
workflow's next version after the accuracy diff on its reviewed documents was shown
(`docflow.workflows.canvas` builds the definition, `docflow.workflows.evaluation` measures and
publishes it). Members with the `write` scope only, as `PUT /v1/workflows/{id}`."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import ValidationError

from docflow.documents import service as documents_service
from docflow.documents.keys import words_key
from docflow.documents.schemas import DocumentRead
from docflow.documents.uploads import service as uploads_service
from docflow.errors import Conflict, DomainError
from docflow.extraction.definition import SCALAR_TYPES, ExtractionWorkflowDefinition
from docflow.extraction.model import ReadDocument
from docflow.http.deps import (
    ClientDep,
    EvaluatorDep,
    SessionDep,
    SettingsDep,
    StorageDep,
    WriteSessionsDep,
)
from docflow.projects import service as projects_service
from docflow.web import pages
from docflow.web.auth_api import PREFIX, Member, MemberDep, TemplatesDep, page
from docflow.web.batches_api import MemberReadsDep
from docflow.web.documents_api import CacheDep, read_sample
from docflow.web.workflows_api import WRITE_SCOPE, errors_at_paths
from docflow.workflows import canvas, evaluation
from docflow.workflows import service as workflows_service
from docflow.workflows.schemas import (
    CanvasBox,
    CanvasBoxes,
    CanvasPreviewIn,
    WorkflowDefinitionIn,
    WorkflowEvaluation,
)
from docflow.workflows.service import WorkflowView

router = APIRouter(include_in_schema=False)

# Documents offered as samples: the tenant's newest with a file.
SAMPLES_SHOWN = 50
# Pages of a sample shown on the canvas (a template is drawn on its first pages).
PAGES_SHOWN = 10
# Characters of the boxes' JSON a canvas form sends (200 boxes are under 60,000).
MAX_BOXES_CHARS = 100_000
TYPES = sorted(t.value for t in SCALAR_TYPES)


def _samples(member: Member, session: SessionDep) -> list[DocumentRead]:
    recent = documents_service.query_documents(
        session, member.tenant, cursor=None, limit=SAMPLES_SHOWN
    )
    return [DocumentRead.model_validate(d) for d in recent.items if d.storage_key is not None]


def _canvas(
    templates: TemplatesDep,
    request: Request,
    session: SessionDep,
    member: Member,
    view: WorkflowView,
    *,
    sample: DocumentRead | None = None,
    read: ReadDocument | None = None,
    unreadable: str | None = None,
    boxes: list[dict[str, Any]] | None = None,
    errors: list[tuple[str, str]] | None = None,
    measured: WorkflowEvaluation | None = None,
    status_code: int = 200,
    refused_upload: bool = False,
) -> Response:
    """The canvas page; `boxes` default to the current version's template regions."""
    if boxes is None:
        boxes = _dumped(canvas.boxes_of(view.definition))
    project = projects_service.get_project(session, member.tenant, project_id=view.project_id)
    words = pages.page_words(read)[:PAGES_SHOWN] if read is not None else []
    return page(
        templates,
        request,
        "canvas.html",
        member,
        status_code=status_code,
        workflow=view,
        project=project,
        samples=_samples(member, session),
        sample=sample,
        unreadable=unreadable,
        page_count=len(words),
        canvas_data={"boxes": boxes, "words": words, "types": TYPES},
        errors=errors or [],
        measured=measured,
        types=TYPES,
        refused_upload=refused_upload,
    )


def _read(
    member: Member,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    cache: pages.FileCache,
    evaluator: EvaluatorDep,
    document_id: str,
) -> tuple[DocumentRead, ReadDocument | None, str | None]:
    """The tenant's document (NotFound for another tenant's) and its pages as read, or why
    they cannot be read."""
    document = documents_service.get_document(session, member.tenant, document_id=document_id)
    stored = documents_service.document_file(session, member.tenant, document_id=document_id)
    shown = DocumentRead.model_validate(document)
    try:
        kept = words_key(member.tenant.tenant_id, document_id)
        read = read_sample(stored.key, storage, settings, cache, evaluator, kept=kept)
        return shown, read, None
    except pages.PageNotShown as refused:
        return shown, None, str(refused)


def _dumped(boxes: list[CanvasBox]) -> list[dict[str, Any]]:
    return [b.model_dump(mode="json") for b in boxes]


@router.get("/workflows/{workflow_id}/canvas", response_class=HTMLResponse)
def canvas_page(
    workflow_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    cache: CacheDep,
    evaluator: EvaluatorDep,
    templates: TemplatesDep,
    document_id: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    """The canvas of the workflow's current version on a sample (`document_id`, else a choice)."""
    member.require(WRITE_SCOPE)
    view = workflows_service.get_workflow(session, member.tenant, workflow_id=workflow_id)
    template = view.definition.template
    sample_id = document_id or (template.sample_document_id if template else None)
    sample, read, unreadable = None, None, None
    if sample_id:
        try:
            sample, read, unreadable = _read(
                member, session, storage, settings, cache, evaluator, sample_id
            )
        except DomainError:
            if document_id:  # asked for: another tenant's or a missing one is "not found"
                raise
    return _canvas(
        templates, request, session, member, view, sample=sample, read=read, unreadable=unreadable
    )


def _found(result: Any) -> dict[str, Any] | None:
    if result is None:
        return None
    box = result.box
    return {
        "value": result.value,
        "raw": result.raw,
        "confidence": round(result.confidence, 3),
        "page": result.page,
        "box": None if box is None else [box.x0, box.y0, box.x1, box.y1],
        "errors": list(result.errors),
    }


@router.post("/workflows/{workflow_id}/canvas/sample", response_class=HTMLResponse)
def upload_sample(
    workflow_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    write_factory: WriteSessionsDep,
    storage: StorageDep,
    client: ClientDep,
    settings: SettingsDep,
    templates: TemplatesDep,
    file: Annotated[UploadFile, File()],
) -> Response:
    """A sample uploaded from the canvas, as a batch of one document of the workflow; its canvas."""
    member.require(WRITE_SCOPE)
    view = workflows_service.get_workflow(session, member.tenant, workflow_id=workflow_id)
    # The submission writes in transactions of its own around storing the file: end the
    # request's (a write transaction, which on SQLite holds the write lock) before it.
    session.commit()
    try:
        document_id = uploads_service.submit_file(
            write_factory,
            storage,
            client,
            settings,
            member.tenant,
            project_id=view.project_id,
            workflow_id=view.id,
            name=file.filename or "sample",
            content_type=file.content_type,
            body=file.file,
        )
    except DomainError as refused:
        return _canvas(
            templates,
            request,
            session,
            member,
            view,
            errors=[(refused.field or "file", refused.detail)],
            status_code=refused.status,
            refused_upload=True,
        )
    return RedirectResponse(
        f"{PREFIX}/workflows/{workflow_id}/canvas?document_id={document_id}", status_code=303
    )


@router.post("/workflows/{workflow_id}/canvas/preview")
async def preview_boxes(
    workflow_id: str,
    body: CanvasPreviewIn,
    member: MemberDep,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
    cache: CacheDep,
    evaluator: EvaluatorDep,
) -> Response:
    """What each box extracts by itself from the sample (`docflow.workflows.canvas.preview`)."""
    member.require(WRITE_SCOPE)

    def run() -> dict[str, Any]:
        view = workflows_service.get_workflow(session, member.tenant, workflow_id=workflow_id)
        _, read, unreadable = _read(
            member, session, storage, settings, cache, evaluator, body.document_id
        )
        if read is None:
            return {"fields": {}, "error": unreadable}
        found = canvas.preview(read, view.definition, body.boxes)
        return {"fields": {name: _found(result) for name, result in found.items()}}

    return JSONResponse(await run_in_threadpool(run))


def _boxes(text: str) -> tuple[list[CanvasBox], list[dict[str, Any]], list[tuple[str, str]]]:
    """The boxes in the form's JSON, the JSON as sent (to draw again), and its errors."""
    try:
        sent: Any = json.loads(text)
    except json.JSONDecodeError:
        return [], [], [("boxes", "not valid JSON")]
    document = {"boxes": sent}
    try:
        return CanvasBoxes.model_validate(document).boxes, sent, []
    except ValidationError as exc:
        drawn = sent if isinstance(sent, list) and all(isinstance(b, dict) for b in sent) else []
        return [], drawn, errors_at_paths(exc, document)


def _candidate(
    current: ExtractionWorkflowDefinition, boxes: list[CanvasBox], sample: str, page_count: int
) -> WorkflowDefinitionIn | list[tuple[str, str]]:
    document = canvas.with_boxes(
        current, boxes, sample_document_id=sample, page_count=max(page_count, 1)
    )
    try:
        return WorkflowDefinitionIn.model_validate(document)
    except ValidationError as exc:
        return errors_at_paths(exc, document)


@router.post("/workflows/{workflow_id}/canvas", response_class=HTMLResponse)
def measure_or_publish(
    workflow_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    reads: MemberReadsDep,
    storage: StorageDep,
    settings: SettingsDep,
    cache: CacheDep,
    evaluator: EvaluatorDep,
    templates: TemplatesDep,
    document_id: Annotated[str, Form(min_length=1, max_length=40)],
    version: Annotated[int, Form(ge=1)],
    boxes: Annotated[str, Form(max_length=MAX_BOXES_CHARS)],
    action: Annotated[Literal["measure", "publish"], Form()],
    despite_regression: Annotated[bool, Form()] = False,
) -> Response:
    """`measure`: the canvas again with the accuracy diff of the boxes' definition against the
    current version on the reviewed documents; `publish`: publish it as the next version,
    refused on a regression unless `despite_regression`. Errors are shown at their path (422),
    a version published since the canvas opened is a 409."""
    member.require(WRITE_SCOPE)
    view = workflows_service.get_workflow(session, member.tenant, workflow_id=workflow_id)
    sample, read, unreadable = _read(
        member, session, storage, settings, cache, evaluator, document_id
    )
    drawn, sent, errors = _boxes(boxes)
    measured: WorkflowEvaluation | None = None
    status_code = 422
    if not errors and view.current_version != version:
        errors = [("version", f"version {view.current_version} was published meanwhile")]
        status_code = 409
    checked: WorkflowDefinitionIn | None = None
    if not errors:
        page_count = len(read.pages) if read is not None else 1
        made = _candidate(view.definition, drawn, sample.id, page_count)
        if isinstance(made, list):
            errors = made
        else:
            checked = made
    if checked is not None:
        definition = checked.as_definition()
        published_by = f"console {member.email}"
        try:
            if action == "measure":
                measured = WorkflowEvaluation.of(
                    evaluation.evaluate_candidate(
                        reads,
                        member.tenant,
                        storage,
                        evaluator,
                        workflow_id=workflow_id,
                        candidate=definition,
                    )
                )
                status_code = 200
            elif despite_regression:
                workflows_service.update_workflow(
                    session,
                    member.tenant,
                    workflow_id=workflow_id,
                    definition=definition,
                    expected_version=version,
                    published_by=published_by,
                )
                return RedirectResponse(f"{PREFIX}/workflows/{workflow_id}", status_code=303)
            else:
                evaluation.update_without_regression(
                    session,
                    reads,
                    member.tenant,
                    storage,
                    evaluator,
                    workflow_id=workflow_id,
                    definition=definition,
                    published_by=published_by,
                )
                return RedirectResponse(f"{PREFIX}/workflows/{workflow_id}", status_code=303)
        except Conflict as exc:
            errors, status_code = [(exc.field or "(workflow)", exc.detail)], 409
    return _canvas(
        templates,
        request,
        session,
        member,
        view,
        sample=sample,
        read=read,
        unreadable=unreadable,
        boxes=sent,
        errors=errors,
        measured=measured,
        status_code=status_code,
    )
