"""Extraction workflows: `/v1/projects/{project_id}/workflows` and `/v1/workflows/{id}`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response, status

from docflow.http.deps import (
    EvaluatorDep,
    PageDep,
    SessionDep,
    StorageDep,
    TenantDep,
    TenantReadsDep,
    require_scope,
)
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE, PROBLEM_MEDIA_TYPE, Problem
from docflow.kit.inputs import PositiveInt32
from docflow.workflows import evaluation, service
from docflow.workflows.schemas import (
    WorkflowDefinitionIn,
    WorkflowEvaluation,
    WorkflowEvaluationIn,
    WorkflowList,
    WorkflowRead,
)

TOO_MANY_RESPONSE: dict[int | str, dict[str, Any]] = {
    429: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "`evaluation_busy`: the process runs as many evaluations as it may; retry",
    }
}

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
    workflow_id: str,
    body: WorkflowDefinitionIn,
    session: SessionDep,
    tenant: TenantDep,
    reads: TenantReadsDep,
    storage: StorageDep,
    evaluator: EvaluatorDep,
    response: Response,
    require_no_regression: Annotated[
        bool,
        Query(
            description="measure the new version on the workflow's reviewed documents first "
            "and refuse it (409 `accuracy_regression`) if any field, or all together, is "
            "right less often than with the current version; with no reviewed documents it "
            "is published (header `Docflow-Evaluated-Documents: 0`)"
        ),
    ] = False,
) -> WorkflowRead:
    """Publish a new version of a workflow; batches keep the version they were created with."""
    definition = body.as_definition()
    if not require_no_regression:
        view = service.update_workflow(
            session, tenant, workflow_id=workflow_id, definition=definition
        )
        return WorkflowRead.model_validate(view)
    view, measured = evaluation.update_without_regression(
        session, reads, tenant, storage, evaluator, workflow_id=workflow_id, definition=definition
    )
    response.headers["Docflow-Evaluated-Documents"] = str(measured.documents)
    return WorkflowRead.model_validate(view)


@router.post(
    "/workflows/{workflow_id}/evaluate",
    response_model=WorkflowEvaluation,
    responses=TOO_MANY_RESPONSE,
    description="Measure a candidate definition against the current version (or "
    "`against_version`) on the workflow's most recently reviewed documents: the engine runs "
    "both over their stored files and compares each labelled field (its value after the "
    "latest review). Nothing is published. With no reviewed documents the answer has "
    "`documents: 0` and a `note`. Bounded by DOCFLOW_EVALUATE_MAX_DOCUMENTS documents and "
    "DOCFLOW_EVALUATE_SECONDS of engine time (documents not started by then are in `skipped` "
    "as `time_budget`, and `complete` is false); 429 `evaluation_busy` when the process "
    "already runs as many evaluations as it may.",
)
def evaluate_workflow(
    workflow_id: str,
    body: WorkflowEvaluationIn,
    tenant: TenantDep,
    reads: TenantReadsDep,
    storage: StorageDep,
    evaluator: EvaluatorDep,
) -> WorkflowEvaluation:
    """Measure a candidate definition on the workflow's reviewed documents (see the route)."""
    measured = evaluation.evaluate_candidate(
        reads,
        tenant,
        storage,
        evaluator,
        workflow_id=workflow_id,
        candidate=body.as_definition(),
        against_version=body.against_version,
    )
    return WorkflowEvaluation.of(measured)
