"""Projects: `/v1/projects`."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response, status

from docflow.http.deps import PageDep, SessionDep, TenantDep, require_scope
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE
from docflow.projects import service
from docflow.projects.schemas import ProjectCreate, ProjectList, ProjectRead, ProjectUpdate

router = APIRouter(prefix="/projects", tags=["projects"], dependencies=[Depends(require_scope())])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ProjectRead,
    responses=CONFLICT_RESPONSE,
)
def create_project(
    body: ProjectCreate, session: SessionDep, tenant: TenantDep, idempotency: IdempotencyDep
) -> Response:
    """Create a project."""
    return idempotency.respond(
        body,
        status_code=status.HTTP_201_CREATED,
        create=lambda: ProjectRead.model_validate(
            service.create_project(session, tenant, name=body.name, description=body.description)
        ),
        current=lambda project_id: service.get_project(session, tenant, project_id=project_id),
    )


@router.get("", response_model=ProjectList)
def list_projects(session: SessionDep, tenant: TenantDep, page: PageDep) -> ProjectList:
    """List the tenant's projects, newest first."""
    result = service.list_projects(session, tenant, cursor=page.cursor, limit=page.limit)
    return ProjectList(
        items=[ProjectRead.model_validate(p) for p in result.items],
        next_cursor=result.next_cursor,
    )


@router.get("/{project_id}", response_model=ProjectRead)
def get_project(project_id: str, session: SessionDep, tenant: TenantDep) -> ProjectRead:
    """Get a project."""
    return ProjectRead.model_validate(service.get_project(session, tenant, project_id=project_id))


@router.patch("/{project_id}", response_model=ProjectRead, responses=CONFLICT_RESPONSE)
def update_project(
    project_id: str, body: ProjectUpdate, session: SessionDep, tenant: TenantDep
) -> ProjectRead:
    """Change a project's name or description."""
    project = service.update_project(
        session, tenant, project_id=project_id, name=body.name, description=body.description
    )
    return ProjectRead.model_validate(project)


@router.delete("/{project_id}", status_code=status.HTTP_204_NO_CONTENT, responses=CONFLICT_RESPONSE)
def delete_project(project_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    """Delete a project."""
    service.delete_project(session, tenant, project_id=project_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
