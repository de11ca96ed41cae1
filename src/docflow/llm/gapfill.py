"""Filling a document's weak fields: at most one call per task, cached, budgeted, recorded.

Called from the documents flow's `document.gapfill` step with the request the extract step
made (`context.GapRequest`). The fields to extract (missing) go in one call at the tier their
fields ask for (the highest among them); the fields to verify (found, but below
`review_threshold`) in another, one tier cheaper. For each: the cached answer when there is
one (a ledger row marked `cache_hit`, no budget spent); else a call reserved against the
monthly budget, made with retries of transient errors, and its answer stored and recorded.
A spent budget or a provider that stays down leaves the fields as OCR found them, and says
so (`notes`: `llm_budget_exhausted`, `llm_unavailable`). Each transaction is short and none
is open during a call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import structlog
from sqlalchemy.orm import Session

from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.kit.clock import utcnow
from docflow.llm import prompt, service
from docflow.llm.config import TIERS, LlmConfig, cheaper
from docflow.llm.context import EXTRACT, VERIFY, Gap, GapRequest
from docflow.llm.grounding import Source, apply_answer
from docflow.llm.provider import Provider, ProviderError, Usage, call_with_retries
from docflow.llm.service import CallRecord

log = structlog.get_logger(__name__)

BUDGET_EXHAUSTED = "llm_budget_exhausted"
UNAVAILABLE = "llm_unavailable"


@dataclass(frozen=True, slots=True)
class Where:
    """The document the calls are for (the ledger's columns)."""

    tenant_id: str
    project_id: str
    batch_id: str
    document_id: str


@dataclass
class Filled:
    """The fields afterwards, what happened (`summary`, kept in the result as `llm`) and the
    reasons to add to the document's (`notes`)."""

    fields: dict[str, dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def tasks(gaps: Sequence[Gap]) -> list[tuple[str, str, list[Gap]]]:
    """(task, tier, gaps) for each task with fields: verification one tier cheaper."""
    out = []
    for task in (EXTRACT, VERIFY):
        chosen = [g for g in gaps if g.task == task]
        if not chosen:
            continue
        tier = max((g.tier for g in chosen), key=TIERS.index)
        out.append((task, cheaper(tier) if task == VERIFY else tier, chosen))
    return out


def fill(
    sessions: Callable[[], Session],
    provider: Provider,
    config: LlmConfig,
    where: Where,
    *,
    definition: ExtractionWorkflowDefinition,
    request: GapRequest,
    fields: dict[str, dict[str, Any]],
) -> Filled:
    """Ask for `request`'s gaps and merge the grounded answers into `fields`."""
    filled = Filled(fields, {"calls": 0, "cache_hits": 0, "tasks": []})
    for task, tier, gaps in tasks(request.gaps):
        model = config.model(tier)
        names = [g.name for g in gaps]
        key = service.cache_key(
            definition,
            text_hash=request.text_hash,
            provider=provider.name,
            model=model,
            task=task,
            fields=names,
        )
        base = CallRecord(
            where.project_id, where.batch_id, where.document_id, task, provider.name, model, tier
        )
        values, cached = _answer(
            sessions,
            provider,
            config,
            where,
            definition,
            request,
            gaps,
            key=key,
            base=base,
            filled=filled,
        )
        if values is None:
            continue
        source = Source(provider.name, model, tier, task, cached)
        filled.fields = apply_answer(filled.fields, definition, gaps, values, request.lines, source)
        filled.summary["tasks"].append(
            {"task": task, "tier": tier, "model": model, "fields": names, "cached": cached}
        )
    filled.summary["status"] = _status(filled)
    return filled


def _answer(
    sessions: Callable[[], Session],
    provider: Provider,
    config: LlmConfig,
    where: Where,
    definition: ExtractionWorkflowDefinition,
    request: GapRequest,
    gaps: list[Gap],
    *,
    key: str,
    base: CallRecord,
    filled: Filled,
) -> tuple[dict[str, Any] | None, bool]:
    """The values answered for `gaps` and whether they came from the cache; None when no
    call could be made (budget spent, provider down: `filled.notes` says which)."""
    tenant_id = where.tenant_id
    with sessions() as session, session.begin():
        now = utcnow()
        cached = service.cached_answer(session, tenant_id, key=key, now=now)
        if cached is not None:
            hit = replace(base, cache_hit=True, attempts=0)
            service.record_call(session, tenant_id, config, hit, now=now)
            filled.summary["cache_hits"] += 1
            return cached, True
        limit = service.monthly_budget(session, config, tenant_id)
        if limit is not None and not service.reserve_call(session, tenant_id, limit=limit, now=now):
            filled.notes.append(
                f"{BUDGET_EXHAUSTED}: the monthly budget of {limit} language-model calls is "
                f"spent; {', '.join(g.name for g in gaps)} stay as OCR read them"
            )
            return None, False
    built = prompt.build(definition, gaps, request.lines)
    started = time.perf_counter()
    try:
        answer, attempts = call_with_retries(
            provider, built, model=base.model, attempts=config.max_attempts
        )
    except ProviderError as exc:
        latency = (time.perf_counter() - started) * 1000
        failed = replace(base, latency_ms=latency, attempts=exc.attempts, error=str(exc))
        with sessions() as session, session.begin():
            service.record_call(session, tenant_id, config, failed, now=utcnow())
        filled.summary["calls"] += 1
        filled.notes.append(
            f"{UNAVAILABLE}: {provider.name} failed ({exc}); "
            f"{', '.join(g.name for g in gaps)} stay as OCR read them"
        )
        log.warning("llm.unavailable", provider=provider.name, error=str(exc))
        return None, False
    latency = (time.perf_counter() - started) * 1000
    values = service.answer_json(answer.values)
    done = replace(base, usage=answer.usage, latency_ms=latency, attempts=attempts)
    with sessions() as session, session.begin():
        now = utcnow()
        service.record_call(session, tenant_id, config, done, now=now)
        service.store_answer(
            session,
            tenant_id,
            key=key,
            model=base.model,
            answer=values,
            now=now,
            ttl_seconds=config.cache_ttl_seconds,
        )
    filled.summary["calls"] += 1
    _count(filled.summary, answer.usage)
    return values, False


def _count(summary: dict[str, Any], usage: Usage) -> None:
    for name in ("input_tokens", "cached_tokens", "output_tokens"):
        summary[name] = summary.get(name, 0) + getattr(usage, name)


def _status(filled: Filled) -> str:
    if any(note.startswith(BUDGET_EXHAUSTED) for note in filled.notes):
        return BUDGET_EXHAUSTED
    if any(note.startswith(UNAVAILABLE) for note in filled.notes):
        return UNAVAILABLE
    return "filled"
