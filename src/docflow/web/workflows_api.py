"""The console's workflows pages: every project's workflows, a workflow's versions, and an
editor for its definition as YAML. Saving validates the document as the API does
(`WorkflowDefinitionIn`, whose errors carry field paths such as `fields.0.locators.1.pattern`),
shows each error beside its path, and publishes the next version through the workflows service
(the `write` scope, as `PUT /v1/workflows/{id}`)."""

from __future__ import annotations

from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from docflow.errors import Conflict, field_path
from docflow.http.deps import SessionDep, SettingsDep
from docflow.projects import service as projects_service
from docflow.trust import service as trust_service
from docflow.trust.service import TrustView
from docflow.web.auth_api import PREFIX, Member, MemberDep, TemplatesDep, page
from docflow.workflows import service as workflows_service
from docflow.workflows.schemas import WorkflowDefinitionIn
from docflow.workflows.service import WorkflowView

router = APIRouter(include_in_schema=False)

WRITE_SCOPE = "write"
# Projects and workflows per project shown (the API pages through more).
SHOWN = 50
# Characters of YAML the editor accepts: the invoice example is under 6,000; longer texts
# cost the YAML parser over a second (the API takes larger definitions as JSON).
MAX_DEFINITION_CHARS = 50_000
# Levels of nesting the YAML may have (a definition needs about six).
MAX_DEPTH = 20
# Versions listed on a workflow's page, newest first (older ones open by `?version=`).
VERSIONS_SHOWN = 100
# Errors listed for one save (the rest are counted).
ERRORS_SHOWN = 50


@router.get("/workflows", response_class=HTMLResponse)
def workflows_page(
    request: Request, member: MemberDep, session: SessionDep, templates: TemplatesDep
) -> Response:
    """The tenant's projects (newest first) and each one's workflows."""
    projects = projects_service.list_projects(session, member.tenant, cursor=None, limit=SHOWN)
    listed = [
        (
            project,
            workflows_service.list_workflows(
                session, member.tenant, project_id=project.id, cursor=None, limit=SHOWN
            ).items,
        )
        for project in projects.items
    ]
    return page(templates, request, "workflows.html", member, projects=listed)


# What the new-workflow form starts with: one field found by its label.
STARTER = """\
name: Invoice
fields:
  - name: invoice_number
    locators:
      - kind: label
        labels: [Invoice No, Invoice number]
"""


def _new_form(
    templates: TemplatesDep,
    request: Request,
    session: SessionDep,
    member: Member,
    *,
    project_id: str | None,
    text: str,
    errors: list[tuple[str, str]],
    status_code: int = 200,
) -> Response:
    projects = projects_service.list_projects(session, member.tenant, cursor=None, limit=SHOWN)
    return page(
        templates,
        request,
        "workflow_new.html",
        member,
        status_code=status_code,
        projects=projects.items,
        project_id=project_id,
        text=text,
        errors=errors,
        max_chars=MAX_DEFINITION_CHARS,
    )


@router.get("/workflows/new", response_class=HTMLResponse)
def new_workflow_page(
    request: Request,
    member: MemberDep,
    session: SessionDep,
    templates: TemplatesDep,
    project_id: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    """The form creating a workflow in one of the tenant's projects (the `write` scope)."""
    member.require(WRITE_SCOPE)
    return _new_form(
        templates, request, session, member, project_id=project_id, text=STARTER, errors=[]
    )


@router.post("/workflows/new", response_class=HTMLResponse)
def create_workflow(
    request: Request,
    member: MemberDep,
    session: SessionDep,
    templates: TemplatesDep,
    project_id: Annotated[str, Form(min_length=1, max_length=40)],
    definition: Annotated[str, Form(max_length=MAX_DEFINITION_CHARS)],
) -> Response:
    """Create a workflow as the API does; if invalid, the form again with each error (422)."""
    member.require(WRITE_SCOPE)
    checked = _validate(definition)
    if not isinstance(checked, list):
        try:
            # Refused before anything is written, so the session stays clean.
            view = workflows_service.create_workflow(
                session,
                member.tenant,
                project_id=project_id,
                definition=checked.as_definition(),
                published_by=f"console {member.email}",
            )
        except Conflict as exc:
            checked = [(exc.field or "(workflow)", exc.detail)]
        else:
            return RedirectResponse(f"{PREFIX}/workflows/{view.id}", status_code=303)
    return _new_form(
        templates,
        request,
        session,
        member,
        project_id=project_id,
        text=definition,
        errors=checked,
        status_code=422,
    )


def _as_yaml(view: WorkflowView) -> str:
    dumped: str = yaml.safe_dump(
        view.definition.model_dump(mode="json"), sort_keys=False, allow_unicode=True
    )
    return dumped


def _editor(
    templates: TemplatesDep,
    request: Request,
    session: SessionDep,
    member: Member,
    view: WorkflowView,
    *,
    text: str,
    errors: list[tuple[str, str]],
    status_code: int = 200,
    trust: TrustView | None = None,
) -> Response:
    project = projects_service.get_project(session, member.tenant, project_id=view.project_id)
    return page(
        templates,
        request,
        "workflow.html",
        member,
        status_code=status_code,
        workflow=view,
        project=project,
        text=text,
        errors=errors,
        versions=workflows_service.version_dates(
            session, member.tenant, workflow_id=view.id, limit=VERSIONS_SHOWN
        ),
        max_chars=MAX_DEFINITION_CHARS,
        trust=trust,
    )


@router.get("/workflows/{workflow_id}", response_class=HTMLResponse)
def workflow_page(
    workflow_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    templates: TemplatesDep,
    settings: SettingsDep,
    version: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    """A workflow's version (default: the current one) as YAML, its versions, and how far
    each of its fields is trusted (with a warning for a field whose precision drifted)."""
    view = workflows_service.get_workflow(
        session, member.tenant, workflow_id=workflow_id, version=version
    )
    trust = trust_service.trust_view(
        session,
        member.tenant,
        workflow_id=workflow_id,
        version=view.version,
        learning=settings.learning,
    )
    return _editor(
        templates, request, session, member, view, text=_as_yaml(view), errors=[], trust=trust
    )


def _refused(text: str) -> str | None:
    """Why the YAML is not even loaded, if it is not: an alias (one can expand to far more
    than the text's size) or nesting deeper than `MAX_DEPTH` (each level costs the parser
    more). Stops at the first such event, so a hostile text costs little."""
    depth = 0
    for event in yaml.parse(text, yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            return "YAML aliases (*name) are not accepted here"
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                return f"the YAML nests deeper than {MAX_DEPTH} levels"
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


def _validate(text: str) -> WorkflowDefinitionIn | list[tuple[str, str]]:
    """The definition in `text`, or its errors as (field path, message) pairs."""
    try:
        refused = _refused(text)
        if refused is not None:
            return [("(workflow)", refused)]
        document: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [("(workflow)", f"not valid YAML: {exc}")]
    if not isinstance(document, dict):
        return [("(workflow)", "the top level must be a mapping of workflow settings")]
    try:
        return WorkflowDefinitionIn.model_validate(document)
    except ValidationError as exc:
        return errors_at_paths(exc, document)


def errors_at_paths(exc: ValidationError, document: Any) -> list[tuple[str, str]]:
    """The first `ERRORS_SHOWN` errors of validating `document` as (field path, message)
    pairs, the rest counted."""
    errors = exc.errors()
    shown = [
        (
            field_path(error["loc"], document) or "(workflow)",
            str(error["msg"]).removeprefix("Value error, "),
        )
        for error in errors[:ERRORS_SHOWN]
    ]
    if len(errors) > ERRORS_SHOWN:
        shown.append(("(workflow)", f"and {len(errors) - ERRORS_SHOWN} more errors"))
    return shown


@router.post("/workflows/{workflow_id}", response_class=HTMLResponse)
def save_workflow(
    workflow_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    templates: TemplatesDep,
    definition: Annotated[str, Form(max_length=MAX_DEFINITION_CHARS)],
    version: Annotated[int, Form(ge=1)],
) -> Response:
    """Publish the edited definition as the workflow's next version; if it is invalid, the
    editor again with the text sent and every error beside its field path (422). `version`
    is the one the editor was opened at: if another was published since, 409 `conflict`."""
    member.require(WRITE_SCOPE)
    current = workflows_service.get_workflow(session, member.tenant, workflow_id=workflow_id)
    checked = _validate(definition)
    if isinstance(checked, list):
        return _editor(
            templates,
            request,
            session,
            member,
            current,
            text=definition,
            errors=checked,
            status_code=422,
        )
    workflows_service.update_workflow(
        session,
        member.tenant,
        workflow_id=workflow_id,
        definition=checked.as_definition(),
        expected_version=version,
        published_by=f"console {member.email}",
    )
    return RedirectResponse(f"{PREFIX}/workflows/{workflow_id}", status_code=303)
