"""Projects: `/v1/projects`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Response, status

from docflow.batches import lifecycle
from docflow.http.deps import PageDep, SessionDep, StorageDep, TenantDep, require_scope
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE, PROBLEM_MEDIA_TYPE, Problem
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
    """Create a project; with `retention_days` its finished batches expire after that long."""
    return idempotency.respond(
        body,
        status_code=status.HTTP_201_CREATED,
        create=lambda: ProjectRead.model_validate(
            service.create_project(
                session,
                tenant,
                name=body.name,
                description=body.description,
                retention_days=body.retention_days,
            )
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
    """Change a project's name, description or `retention_days` (null: keep batches forever)."""
    project = service.update_project(
        session,
        tenant,
        project_id=project_id,
        name=body.name,
        description=body.description,
        retention_days=body.retention_days if body.sets_retention else service.KEEP,
    )
    return ProjectRead.model_validate(project)


@router.delete(
    "/{project_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`conflict`: the project has batches (without `cascade`); "
            "`batch_running`: one of its batches is not terminal",
        },
    },
)
def delete_project(
    project_id: str,
    session: SessionDep,
    tenant: TenantDep,
    storage: StorageDep,
    background: BackgroundTasks,
    cascade: Annotated[
        bool, Query(description="also delete its batches (every one must be terminal)")
    ] = False,
) -> Response:
    """Delete a project with its workflows; with `cascade=true` its batches too."""
    keys = lifecycle.delete_project(session, tenant, project_id=project_id, cascade=cascade)
    background.add_task(lifecycle.remove_files, storage, keys)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
