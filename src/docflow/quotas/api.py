"""The tenant's plan and consumption: `GET /v1/usage`."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from docflow.http.deps import SessionDep, SettingsDep, TenantDep, require_scope
from docflow.quotas import service
from docflow.quotas.schemas import MonthUsage, PlanLimits, UsageRead

router = APIRouter(prefix="/usage", tags=["usage"], dependencies=[Depends(require_scope())])


@router.get("", response_model=UsageRead)
def get_usage(session: SessionDep, tenant: TenantDep, settings: SettingsDep) -> UsageRead:
    """The tenant's plan, its limits (null: none) and this month's documents and pages."""
    found = service.usage(session, tenant, settings)
    limits = found.limits
    return UsageRead(
        plan=found.plan,
        limits=PlanLimits(
            requests_per_second=limits.requests_per_second,
            burst=limits.burst,
            documents_per_month=limits.documents_per_month,
            pages_per_month=limits.pages_per_month,
            max_batch_documents=service.max_batch_documents(settings, limits),
        ),
        usage=MonthUsage(
            month=found.month,
            documents=found.documents,
            pages=found.pages,
            resets_at=found.resets_at,
        ),
    )
