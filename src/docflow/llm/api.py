"""`GET /v1/usage/llm`: the calling tenant's language-model usage per day and model."""

from __future__ import annotations

from decimal import Decimal

from fastapi import APIRouter, Depends

from docflow.http.deps import IdQuery, SessionDep, TenantDep, require_scope
from docflow.kit.inputs import Timestamp
from docflow.llm import service
from docflow.llm.schemas import LlmUsage, LlmUsageRow

router = APIRouter(tags=["usage"], dependencies=[Depends(require_scope())])


@router.get("/usage/llm", response_model=LlmUsage)
def llm_usage(
    session: SessionDep,
    tenant: TenantDep,
    project_id: IdQuery = None,
    since: Timestamp | None = None,
    until: Timestamp | None = None,
) -> LlmUsage:
    """The tenant's language-model calls, tokens and cost per UTC day and model (of a project)."""
    rows = service.usage(session, tenant, since=since, until=until, project_id=project_id)
    items = [LlmUsageRow.model_validate(row) for row in rows]
    return LlmUsage(
        items=items,
        calls=sum(r.calls for r in items),
        cache_hits=sum(r.cache_hits for r in items),
        cost=sum((r.cost for r in items), Decimal(0)),
    )
