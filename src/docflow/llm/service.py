"""The gap-fill's bookkeeping: the result cache, the cost ledger and the monthly budgets.

- Answers are cached per field, under the SHA-256 of (the definition's schema hash, the
  SHA-256 of the document's bytes, the two thresholds, the provider and model, the field):
  the same file read again under the same workflow version and thresholds asks nothing,
  whatever OCR read this time (its text may differ under load, a second reading may time
  out, a field may be missing one time and doubted the next). A null answer is cached like
  any other. Answers are kept per tenant for `cache_ttl_seconds`; storing one deletes the
  tenant's expired ones.
- Every call, and every answer served from the cache, is one ledger row.
- A tenant's budget is calls per calendar month (UTC): `monthly_calls[tenant_id]` when set,
  else `monthly_calls[plan]`, else none. A call is reserved before it is made
  (`LlmRepository.reserve`, one conditional UPDATE), so concurrent documents never pass the
  budget (a call that then fails still counts); the reservation that reaches 80% emits
  `docflow.tenant.llm_budget_warning.v1` once a month.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from docflow.events import envelopes
from docflow.events.outbox import emit
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.kit import ids
from docflow.llm.config import LlmConfig
from docflow.llm.models import LlmCall
from docflow.llm.provider import Usage
from docflow.llm.repository import LlmRepository, UsageRow
from docflow.observability.metrics import LLM_CALLS, LLM_COST, LLM_TOKENS, count_after_commit
from docflow.tenancy import TenantContext
from docflow.tenants.service import get_tenant
from docflow.workflows.service import schema_hash

CALL_PREFIX = "llc"
WARN_SHARE = 0.8


def cache_key(
    definition: ExtractionWorkflowDefinition,
    *,
    document_hash: str,
    provider: str,
    model: str,
    field: str,
) -> str:
    """The key of one field's answer: what makes the same question (see the module's doc)."""
    parts = [
        schema_hash(definition),
        document_hash,
        repr((definition.confidence_threshold, definition.review_threshold)),
        provider,
        model,
        field,
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def cached_answers(
    session: Session, tenant_id: str, *, keys: Mapping[str, str], now: datetime
) -> dict[str, Any]:
    """The answers stored (and not expired) for the fields of `keys` (field -> key), by
    field; a null answer is an answer too. A field without one is left out."""
    found = LlmRepository(session, tenant_id).cached(list(keys.values()), now=now)
    return {name: found[key].get("value") for name, key in keys.items() if key in found}


def store_answers(
    session: Session,
    tenant_id: str,
    *,
    keys: Mapping[str, str],
    model: str,
    values: Mapping[str, Any],
    now: datetime,
    ttl_seconds: int,
) -> None:
    """Store each field's answer under its key, a field the answer left out as null."""
    if ttl_seconds <= 0:
        return
    repository = LlmRepository(session, tenant_id)
    repository.forget_expired(now=now)  # the cache's only sweep: bounded by its index
    expires_at = now + timedelta(seconds=ttl_seconds)
    for name, key in sorted(keys.items()):
        answer = {"value": values.get(name)}
        repository.store(key, model=model, answer=answer, now=now, expires_at=expires_at)


def monthly_budget(session: Session, config: LlmConfig, tenant_id: str) -> int | None:
    """The tenant's calls per month: its own budget, else its plan's, else None (no limit)."""
    if tenant_id in config.monthly_calls:
        return config.monthly_calls[tenant_id]
    return config.monthly_calls.get(get_tenant(session, tenant_id).plan)


def month_of(now: datetime) -> str:
    return now.strftime("%Y-%m")


def reserve_call(session: Session, tenant_id: str, *, limit: int, now: datetime) -> bool:
    """Reserve one call of this month's budget `limit`: False when it is spent. The
    reservation that reaches 80% writes the month's warning event (once)."""
    repository = LlmRepository(session, tenant_id)
    month = month_of(now)
    calls = repository.reserve(month, limit=limit)
    if calls is None:
        return False
    if calls >= WARN_SHARE * limit and repository.mark_warned(month, now=now):
        emit(
            session,
            tenant_id=tenant_id,
            type=envelopes.LLM_BUDGET_WARNING,
            subject=f"tenants/{tenant_id}",
            data={
                "tenant_id": tenant_id,
                "month": month,
                "calls": calls,
                "budget_calls": limit,
                "share": round(calls / limit, 4),
                "link": "/v1/usage/llm",
            },
        )
    return True


@dataclass(frozen=True, slots=True)
class CallRecord:
    """What the ledger keeps of one call (or cache hit) besides its tenant."""

    project_id: str
    batch_id: str
    document_id: str
    task: str
    provider: str
    model: str
    tier: str
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    cache_hit: bool = False
    attempts: int = 1
    error: str | None = None


def record_call(
    session: Session, tenant_id: str, config: LlmConfig, call: CallRecord, *, now: datetime
) -> Decimal:
    """Write the ledger row of `call`; its cost."""
    cost = config.cost(
        call.model,
        input_tokens=call.usage.input_tokens,
        cached_tokens=call.usage.cached_tokens,
        output=call.usage.output_tokens,
    )
    LlmRepository(session, tenant_id).record(
        LlmCall(
            id=ids.new_id(CALL_PREFIX),
            project_id=call.project_id,
            batch_id=call.batch_id,
            document_id=call.document_id,
            task=call.task,
            provider=call.provider,
            model=call.model,
            tier=call.tier,
            input_tokens=call.usage.input_tokens,
            cached_tokens=call.usage.cached_tokens,
            output_tokens=call.usage.output_tokens,
            latency_ms=round(call.latency_ms, 3),
            cost=cost,
            cache_hit=call.cache_hit,
            attempts=call.attempts,
            error=call.error[:200] if call.error else None,
            created_at=now,
        )
    )
    _count(session, call, cost)
    return cost


def _count(session: Session, call: CallRecord, cost: Decimal) -> None:
    """The call in the metrics, once the ledger row is committed."""
    provider, model = call.provider, call.model
    outcome = "failed" if call.error else "cached" if call.cache_hit else "answered"
    count_after_commit(
        session, LLM_CALLS, provider=provider, model=model, task=call.task, outcome=outcome
    )
    if call.cache_hit:
        return
    usage = call.usage
    for kind, tokens in (
        ("input", usage.input_tokens),
        ("cached", usage.cached_tokens),
        ("output", usage.output_tokens),
    ):
        if tokens:
            count_after_commit(
                session, LLM_TOKENS, float(tokens), provider=provider, model=model, kind=kind
            )
    if cost:
        count_after_commit(session, LLM_COST, float(cost), provider=provider, model=model)


def usage(
    session: Session,
    tenant: TenantContext,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    project_id: str | None = None,
) -> list[UsageRow]:
    """The tenant's language-model usage per UTC day and model."""
    return LlmRepository(session, tenant.tenant_id).usage(
        since=since, until=until, project_id=project_id
    )


def answer_json(values: dict[str, Any]) -> dict[str, Any]:
    """An answer as stored: its values, JSON round-tripped (plain types only)."""
    loaded: dict[str, Any] = json.loads(json.dumps(values, default=str))
    return loaded
