"""Use cases for extraction workflows: create, edit (a new version), list, get, apply by name.

A workflow's definition is an `ExtractionWorkflowDefinition`; each edit stores an immutable
version, and the workflow row points at the newest. Batches pin the version they run with.

A version stored by an earlier release may break rules that came since (a pattern RE2 cannot
run, a bound): it is still shown as stored, and its `problem` says why the engine refuses it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from pydantic import ValidationError
from sqlalchemy.orm import Session

from docflow.errors import Conflict, get_one
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType, read_stored
from docflow.extraction.workflow_file import describe_errors
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.projects.service import get_project
from docflow.tenancy import TenantContext
from docflow.workflows.events import workflow_published
from docflow.workflows.models import ExtractionWorkflow, ExtractionWorkflowVersion
from docflow.workflows.repository import WorkflowRepository

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class WorkflowView:
    """A workflow with one of its versions: the row's facts plus that version's definition,
    and why the engine may not run that definition (`problem`, None when it may)."""

    id: str
    tenant_id: str
    project_id: str
    name: str
    version: int
    current_version: int
    definition: ExtractionWorkflowDefinition
    schema_hash: str
    created_at: datetime
    updated_at: datetime
    version_created_at: datetime
    problem: str | None = None
    published_by: str | None = None


def schema_hash(definition: ExtractionWorkflowDefinition) -> str:
    """SHA-256 of the definition's canonical JSON: equal hashes mean equal definitions."""
    canonical = json.dumps(
        definition.model_dump(mode="json"), sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


_PROBLEMS_SHOWN = 5


def _stored_definition(stored: dict[str, Any]) -> tuple[ExtractionWorkflowDefinition, str | None]:
    try:
        return ExtractionWorkflowDefinition.model_validate(stored), None
    except ValidationError as exc:
        return read_stored(stored), describe_errors(exc, stored, limit=_PROBLEMS_SHOWN)


def _view(workflow: ExtractionWorkflow, version: ExtractionWorkflowVersion) -> WorkflowView:
    definition, problem = _stored_definition(version.definition)
    return WorkflowView(
        id=workflow.id,
        tenant_id=workflow.tenant_id,
        project_id=workflow.project_id,
        name=workflow.name,
        version=version.version,
        current_version=workflow.current_version,
        definition=definition,
        schema_hash=version.schema_hash,
        created_at=workflow.created_at,
        updated_at=workflow.updated_at,
        version_created_at=version.created_at,
        problem=problem,
        published_by=version.published_by,
    )


def publisher(tenant: TenantContext) -> str:
    """Who a version published by `tenant` is attributed to: its API key, else its actor."""
    return tenant.key_id or tenant.actor


def _add_version(
    session: Session,
    workflow: ExtractionWorkflow,
    definition: ExtractionWorkflowDefinition,
    published_by: str,
) -> ExtractionWorkflowVersion:
    version = ExtractionWorkflowVersion(
        tenant_id=workflow.tenant_id,
        workflow_id=workflow.id,
        version=workflow.current_version,
        definition=definition.model_dump(mode="json"),
        schema_hash=schema_hash(definition),
        created_at=workflow.updated_at,
        published_by=published_by,
    )
    session.add(version)
    session.flush()
    # Every version is a publication (version 1 at creation), announced in its transaction.
    workflow_published(session, workflow, version)
    return version


def create_workflow(
    session: Session,
    tenant: TenantContext,
    *,
    project_id: str,
    definition: ExtractionWorkflowDefinition,
    published_by: str | None = None,
) -> WorkflowView:
    """A new workflow (version 1) in a project; Conflict if the project has one of that name.
    `published_by` names who published it (default: `publisher(tenant)`)."""
    get_project(session, tenant, project_id=project_id)
    repo = WorkflowRepository(session, tenant.tenant_id)
    if repo.by_name(project_id, definition.name) is not None:
        raise Conflict("the project already has a workflow with this name", field="name")
    now = utcnow()
    workflow = ExtractionWorkflow(
        tenant_id=tenant.tenant_id,
        id=ids.new_id(ids.WORKFLOW),
        project_id=project_id,
        name=definition.name,
        current_version=1,
        created_at=now,
        updated_at=now,
    )
    session.add(workflow)
    session.flush()
    version = _add_version(session, workflow, definition, published_by or publisher(tenant))
    log.info("workflow.created", tenant_id=tenant.tenant_id, workflow_id=workflow.id)
    return _view(workflow, version)


def update_workflow(
    session: Session,
    tenant: TenantContext,
    *,
    workflow_id: str,
    definition: ExtractionWorkflowDefinition,
    expected_version: int | None = None,
    published_by: str | None = None,
) -> WorkflowView:
    """Publish `definition` as the workflow's next version (renaming it if the name changed);
    with `expected_version`, only if that is still the current version (Conflict otherwise).
    `published_by` names who published it (default: `publisher(tenant)`)."""
    repo = WorkflowRepository(session, tenant.tenant_id)
    workflow = get_one(repo.get_for_update(workflow_id), "workflow")
    if expected_version is not None and workflow.current_version != expected_version:
        raise Conflict(
            f"version {workflow.current_version} was published meanwhile; measure again",
            field="version",
        )
    if definition.name != workflow.name:
        other = repo.by_name(workflow.project_id, definition.name)
        if other is not None and other.id != workflow.id:
            raise Conflict("the project already has a workflow with this name", field="name")
        workflow.name = definition.name
    workflow.current_version += 1
    workflow.updated_at = utcnow()
    version = _add_version(session, workflow, definition, published_by or publisher(tenant))
    log.info(
        "workflow.versioned",
        tenant_id=tenant.tenant_id,
        workflow_id=workflow.id,
        version=version.version,
    )
    return _view(workflow, version)


def get_workflow(
    session: Session, tenant: TenantContext, *, workflow_id: str, version: int | None = None
) -> WorkflowView:
    """A workflow with the given version (default: the current one); NotFound otherwise."""
    repo = WorkflowRepository(session, tenant.tenant_id)
    workflow = get_one(repo.get(workflow_id), "workflow")
    number = version if version is not None else workflow.current_version
    row = get_one(repo.version(workflow_id, number), "workflow version", field="version")
    return _view(workflow, row)


def version_dates(
    session: Session, tenant: TenantContext, *, workflow_id: str, limit: int
) -> list[tuple[int, datetime, str | None]]:
    """The workflow's newest `limit` versions as (number, published at, published by), newest
    first."""
    repo = WorkflowRepository(session, tenant.tenant_id)
    get_one(repo.get(workflow_id), "workflow")
    return repo.version_dates(workflow_id, limit=limit)


def list_workflows(
    session: Session, tenant: TenantContext, *, project_id: str, cursor: str | None, limit: int
) -> Page[WorkflowView]:
    """A project's workflows with their current version, most recently updated first."""
    get_project(session, tenant, project_id=project_id)
    repo = WorkflowRepository(session, tenant.tenant_id)
    page = repo.page(project_id, cursor=cursor, limit=limit)
    current = repo.current_versions(page.items)
    return page.map(lambda w: _view(w, current[w.id]))


def apply_workflow(
    session: Session,
    tenant: TenantContext,
    *,
    project_id: str,
    definition: ExtractionWorkflowDefinition,
) -> WorkflowView:
    """Create the workflow named in `definition`, or publish a new version when it differs from
    the current one; an unchanged definition changes nothing (`docflow workflows apply -f`)."""
    get_project(session, tenant, project_id=project_id)
    existing = WorkflowRepository(session, tenant.tenant_id).by_name(project_id, definition.name)
    if existing is None:
        return create_workflow(session, tenant, project_id=project_id, definition=definition)
    current = get_workflow(session, tenant, workflow_id=existing.id)
    if current.schema_hash == schema_hash(definition):
        return current
    return update_workflow(session, tenant, workflow_id=existing.id, definition=definition)


def field_names(
    session: Session, tenant: TenantContext, *, project_id: str | None
) -> frozenset[str]:
    """The names of the fields any version of the tenant's workflows (of one project) has, line
    item tables included: the fields the tenant's documents can hold."""
    return frozenset(field_types(session, tenant, project_id=project_id))


def field_types(
    session: Session, tenant: TenantContext, *, project_id: str | None
) -> dict[str, str]:
    """The type of each field any version of the tenant's workflows (of one project) has, by
    name: the one type every version gives it, or `string` when two versions disagree."""
    types: dict[str, str] = {}
    for stored in WorkflowRepository(session, tenant.tenant_id).definitions(project_id):
        fields = stored.get("fields") if isinstance(stored, dict) else None
        for field in fields if isinstance(fields, list) else []:
            if isinstance(field, dict) and isinstance(field.get("name"), str):
                kind = str(field.get("type") or FieldType.STRING)
                name = field["name"]
                types[name] = kind if types.get(name, kind) == kind else FieldType.STRING
    return types
