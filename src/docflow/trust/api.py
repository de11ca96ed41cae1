"""Earned trust: `/v1/workflows/{id}/trust`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from docflow.http.deps import SessionDep, SettingsDep, TenantDep, require_scope
from docflow.kit.inputs import PositiveInt32
from docflow.trust import service
from docflow.trust.schemas import WorkflowTrust

router = APIRouter(tags=["workflows"], dependencies=[Depends(require_scope())])


@router.get("/workflows/{workflow_id}/trust", response_model=WorkflowTrust)
def get_trust(
    workflow_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    version: Annotated[
        PositiveInt32 | None, Query(description="a version; default the latest")
    ] = None,
) -> WorkflowTrust:
    """Per field of a workflow version: reviewed examples, earned cut, precision, automation."""
    view = service.trust_view(
        session, tenant, workflow_id=workflow_id, version=version, learning=settings.learning
    )
    return WorkflowTrust.model_validate(view)
