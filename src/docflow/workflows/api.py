"""Extraction workflows: `/v1/projects/{project_id}/workflows` and `/v1/workflows/{id}`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status

from docflow.http.deps import PageDep, SessionDep, TenantDep, require_scope
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE
from docflow.kit.inputs import PositiveInt32
from docflow.workflows import service
from docflow.workflows.schemas import WorkflowDefinitionIn, WorkflowList, WorkflowRead

router = APIRouter(tags=["workflows"], dependencies=[Depends(require_scope())])


@router.post(
    "/projects/{project_id}/workflows",
    status_code=status.HTTP_201_CREATED,
    response_model=WorkflowRead,
    responses=CONFLICT_RESPONSE,
)
def create_workflow(
    project_id: str,
    body: WorkflowDefinitionIn,
    session: SessionDep,
    tenant: TenantDep,
    idempotency: IdempotencyDep,
) -> Response:
    """Create an extraction workflow (version 1) in a project."""
    return idempotency.respond(
        body,
        status_code=status.HTTP_201_CREATED,
        create=lambda: WorkflowRead.model_validate(
            service.create_workflow(
                session, tenant, project_id=project_id, definition=body.as_definition()
            )
        ),
        # A workflow is deleted with its project.
        current=lambda workflow_id: service.get_workflow(session, tenant, workflow_id=workflow_id),
    )


@router.get("/projects/{project_id}/workflows", response_model=WorkflowList)
def list_workflows(
    project_id: str, session: SessionDep, tenant: TenantDep, page: PageDep
) -> WorkflowList:
    """List a project's workflows (latest version of each), most recently updated first."""
    result = service.list_workflows(
        session, tenant, project_id=project_id, cursor=page.cursor, limit=page.limit
    )
    return WorkflowList(
        items=[WorkflowRead.model_validate(w) for w in result.items],
        next_cursor=result.next_cursor,
    )


@router.get("/workflows/{workflow_id}", response_model=WorkflowRead)
def get_workflow(
    workflow_id: str,
    session: SessionDep,
    tenant: TenantDep,
    version: Annotated[
        PositiveInt32 | None, Query(description="a version; default the latest")
    ] = None,
) -> WorkflowRead:
    """Get a workflow: its latest version, or the given one."""
    view = service.get_workflow(session, tenant, workflow_id=workflow_id, version=version)
    return WorkflowRead.model_validate(view)


@router.put("/workflows/{workflow_id}", response_model=WorkflowRead, responses=CONFLICT_RESPONSE)
def update_workflow(
    workflow_id: str, body: WorkflowDefinitionIn, session: SessionDep, tenant: TenantDep
) -> WorkflowRead:
    """Publish a new version of a workflow; batches keep the version they were created with."""
    view = service.update_workflow(
        session, tenant, workflow_id=workflow_id, definition=body.as_definition()
    )
    return WorkflowRead.model_validate(view)
