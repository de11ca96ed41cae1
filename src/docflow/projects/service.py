"""Use cases for projects."""

from __future__ import annotations

import structlog
from sqlalchemy.orm import Session

from docflow.errors import Conflict, InvalidInput, get_one
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.projects.models import Project
from docflow.projects.repository import ProjectRepository
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

MAX_DESCRIPTION = 2000


def _clean_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidInput("project name must be 1 to 200 characters", field="name")
    return name


def _clean_description(description: str) -> str:
    if len(description) > MAX_DESCRIPTION:
        raise InvalidInput(
            f"description must be at most {MAX_DESCRIPTION} characters", field="description"
        )
    return description


def create_project(
    session: Session, tenant: TenantContext, *, name: str, description: str = ""
) -> Project:
    """A new project; Conflict when the tenant already has one with this name."""
    repo = ProjectRepository(session, tenant.tenant_id)
    name = _clean_name(name)
    if repo.by_name(name) is not None:
        raise Conflict("a project with this name already exists", field="name")
    project = Project(
        tenant_id=tenant.tenant_id,
        id=ids.new_id(ids.PROJECT),
        name=name,
        description=_clean_description(description),
    )
    session.add(project)
    session.flush()
    log.info("project.created", tenant_id=tenant.tenant_id, project_id=project.id)
    return project


def list_projects(
    session: Session, tenant: TenantContext, *, cursor: str | None, limit: int
) -> Page[Project]:
    """The tenant's projects, newest first."""
    return ProjectRepository(session, tenant.tenant_id).page(cursor=cursor, limit=limit)


def get_project(session: Session, tenant: TenantContext, *, project_id: str) -> Project:
    """One of the tenant's projects; NotFound for a missing id or another tenant's."""
    return get_one(ProjectRepository(session, tenant.tenant_id).get(project_id), "project")


def update_project(
    session: Session,
    tenant: TenantContext,
    *,
    project_id: str,
    name: str | None = None,
    description: str | None = None,
) -> Project:
    """Change the name and/or description; Conflict when the new name is taken."""
    repo = ProjectRepository(session, tenant.tenant_id)
    project = get_project(session, tenant, project_id=project_id)
    if name is not None:
        name = _clean_name(name)
        other = repo.by_name(name)
        if other is not None and other.id != project.id:
            raise Conflict("a project with this name already exists", field="name")
        project.name = name
    if description is not None:
        project.description = _clean_description(description)
    project.updated_at = utcnow()
    session.flush()
    return project


def delete_project(session: Session, tenant: TenantContext, *, project_id: str) -> None:
    """Delete a project and its workflows; Conflict while it has batches."""
    project = get_project(session, tenant, project_id=project_id)
    if project.batch_count > 0:
        raise Conflict("the project has batches and cannot be deleted")
    session.delete(project)
    session.flush()
    log.info("project.deleted", tenant_id=tenant.tenant_id, project_id=project_id)
