"""The tenant's plan and consumption: `GET /v1/usage`."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from docflow.http.deps import ClientDep, SessionDep, SettingsDep, TenantDep, require_scope
from docflow.quotas import service
from docflow.quotas.schemas import MonthUsage, PlanLimits, RunningUsage, UsageRead

router = APIRouter(prefix="/usage", tags=["usage"], dependencies=[Depends(require_scope())])


@router.get("", response_model=UsageRead)
def get_usage(
    session: SessionDep, client: ClientDep, tenant: TenantDep, settings: SettingsDep
) -> UsageRead:
    """The tenant's plan, its limits (null: none), this month's use and documents running."""
    found = service.usage(session, client, tenant, settings)
    limits = found.limits
    return UsageRead(
        plan=found.plan,
        limits=PlanLimits(
            requests_per_second=limits.requests_per_second,
            burst=limits.burst,
            documents_per_month=limits.documents_per_month,
            pages_per_month=limits.pages_per_month,
            max_batch_documents=service.max_batch_documents(settings, limits),
            concurrent_documents=limits.concurrent_documents,
            reserved_slots=limits.reserved_slots,
        ),
        usage=MonthUsage(
            month=found.month,
            documents=found.documents,
            pages=found.pages,
            resets_at=found.resets_at,
        ),
        running=RunningUsage(documents=found.running_documents, limit=limits.concurrent_documents),
    )
