"""The console's usage page (every member, as `GET /v1/usage` and `GET /v1/usage/llm` need
only `read`): the tenant's plan and its limits, this month's documents and pages, and the
language-model calls, tokens and cost per UTC day and model over the last `LLM_DAYS` days."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from docflow.http.deps import ClientDep, SessionDep, SettingsDep
from docflow.kit.clock import utcnow
from docflow.llm import service as llm_service
from docflow.quotas import service as quotas_service
from docflow.web.auth_api import MemberDep, TemplatesDep, page

router = APIRouter(include_in_schema=False)

# Days of language-model usage shown (the API answers any range).
LLM_DAYS = 31


@router.get("/usage", response_class=HTMLResponse)
def usage_page(
    request: Request,
    member: MemberDep,
    session: SessionDep,
    client: ClientDep,
    settings: SettingsDep,
    templates: TemplatesDep,
) -> Response:
    """The plan, its limits and the month's use; the language-model use per day and model."""
    found = quotas_service.usage(session, client, member.tenant, settings)
    since = utcnow() - timedelta(days=LLM_DAYS)
    rows = llm_service.usage(session, member.tenant, since=since)
    return page(
        templates,
        request,
        "usage.html",
        member,
        usage=found,
        max_batch_documents=quotas_service.max_batch_documents(settings, found.limits),
        llm=rows,
        llm_days=LLM_DAYS,
        llm_calls=sum(r.calls for r in rows),
        llm_cache_hits=sum(r.cache_hits for r in rows),
        llm_cost=sum((r.cost for r in rows), Decimal(0)),
    )
