"""Use cases for projects."""

from __future__ import annotations

import enum

import structlog
from sqlalchemy.orm import Session

from docflow.errors import Conflict, InvalidInput, get_one
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.projects.models import Project
from docflow.projects.repository import ProjectRepository, Retention, find_retention_projects
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

MAX_DESCRIPTION = 2000
MIN_RETENTION_DAYS = 1
MAX_RETENTION_DAYS = 36500


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


class Keep(enum.Enum):
    """The value of an update argument left unchanged (where None is a value)."""

    KEEP = "keep"


KEEP = Keep.KEEP


def _clean_retention(days: int | None) -> int | None:
    if days is not None and not MIN_RETENTION_DAYS <= days <= MAX_RETENTION_DAYS:
        raise InvalidInput(
            f"retention_days must be {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}, or null",
            field="retention_days",
        )
    return days


def create_project(
    session: Session,
    tenant: TenantContext,
    *,
    name: str,
    description: str = "",
    retention_days: int | None = None,
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
        retention_days=_clean_retention(retention_days),
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
    retention_days: int | Keep | None = KEEP,
) -> Project:
    """Change the name, description and/or retention (None: keep batches forever; `KEEP`,
    the default: unchanged); Conflict when the new name is taken."""
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
    if not isinstance(retention_days, Keep):
        project.retention_days = _clean_retention(retention_days)
        log.info(
            "project.retention_set",
            tenant_id=tenant.tenant_id,
            project_id=project_id,
            days=retention_days,
            actor=tenant.actor,
        )
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


def retention_projects(session: Session, *, limit: int) -> list[Retention]:
    """Every tenant's projects that keep their batches a number of days (at most `limit`),
    for the retention schedule."""
    return find_retention_projects(session, limit)
