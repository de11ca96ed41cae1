"""Filling a document's weak fields: at most one call per task, cached, budgeted, recorded.

Called from the documents flow's `document.gapfill` step with the request the extract step
made (`context.GapRequest`). The fields to extract (missing) go in one call at the tier their
fields ask for (the highest among them); the fields to verify (found, but below
`review_threshold`) in another, one tier cheaper. For each: the answers in the cache, field
by field (a ledger row marked `cache_hit`, no budget spent); for the fields without one, a
call reserved against the monthly budget, made with retries of transient errors, its answer
stored per field (a null too) and recorded. A document asking what another one in the
process is asking waits for that answer (`flights`), so the question is asked once. A spent
budget or a provider that stays down leaves the fields as OCR found them, and says so
(`notes`: `llm_budget_exhausted`, `llm_unavailable`); a failed call is not cached, so the
document's next run asks again. Each transaction is short and none is open during a call.
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
from docflow.llm.flights import Flights
from docflow.llm.grounding import Source, Vouch, apply_answer, dropped_notes, no_reviews
from docflow.llm.provider import Provider, ProviderError, Usage, call_with_retries
from docflow.llm.service import CallRecord

log = structlog.get_logger(__name__)

BUDGET_EXHAUSTED = "llm_budget_exhausted"
FLIGHTS = Flights()  # the process's askers, one per question at a time
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
    vouched: Vouch = no_reviews,
) -> Filled:
    """Ask for `request`'s gaps and merge the grounded answers into `fields` (`vouched`: see
    `grounding.apply_answer`)."""
    filled = Filled(fields, {"calls": 0, "cache_hits": 0, "tasks": []})
    for task, tier, gaps in tasks(request.gaps):
        model = config.model(tier)
        keys = _keys(definition, request, gaps, provider=provider.name, model=model)
        base = CallRecord(
            where.project_id, where.batch_id, where.document_id, task, provider.name, model, tier
        )
        asking = Asking(where.tenant_id, definition, request, gaps, keys, base)
        with FLIGHTS.hold(f"{where.tenant_id}:{key}" for key in keys.values()):
            found, answered = _answer(sessions, provider, config, asking, filled)
        for values, cached in ((found, True), (answered or {}, False)):
            chosen = [g for g in gaps if g.name in values]
            if chosen:
                source = Source(provider.name, model, tier, task, cached)
                filled.fields = apply_answer(
                    filled.fields,
                    definition,
                    chosen,
                    values,
                    request.lines,
                    source,
                    vouched=vouched,
                )
        if found or answered is not None:
            names = [g.name for g in gaps]
            done = {"task": task, "tier": tier, "model": model, "fields": names}
            filled.summary["tasks"].append({**done, "cached": answered is None})
    filled.notes.extend(dropped_notes(filled.fields, request.gaps))
    filled.summary["status"] = _status(filled)
    return filled


def _keys(
    definition: ExtractionWorkflowDefinition,
    request: GapRequest,
    gaps: list[Gap],
    *,
    provider: str,
    model: str,
) -> dict[str, str]:
    """Each field's cache key (`service.cache_key`), by field."""
    return {
        g.name: service.cache_key(
            definition,
            document_hash=request.document_key,
            provider=provider,
            model=model,
            field=g.name,
        )
        for g in gaps
    }


@dataclass(frozen=True, slots=True)
class Asking:
    """One task's question: its fields (`gaps`), their cache keys and the ledger's columns."""

    tenant_id: str
    definition: ExtractionWorkflowDefinition
    request: GapRequest
    gaps: list[Gap]
    keys: dict[str, str]
    base: CallRecord


def _answer(
    sessions: Callable[[], Session],
    provider: Provider,
    config: LlmConfig,
    asking: Asking,
    filled: Filled,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The answers found in the cache, by field, and those of the call made for the other
    fields (None when no call was made: none was needed, or the budget is spent; or the
    call failed: `filled.notes` says which)."""
    tenant_id = asking.tenant_id
    with sessions() as session, session.begin():
        now = utcnow()
        found = service.cached_answers(session, tenant_id, keys=asking.keys, now=now)
        if found:
            hit = replace(asking.base, cache_hit=True, attempts=0)
            service.record_call(session, tenant_id, config, hit, now=now)
            filled.summary["cache_hits"] += 1
        missing = [g for g in asking.gaps if g.name not in found]
        if not missing:
            return found, None
        limit = service.monthly_budget(session, config, tenant_id)
        if limit is not None and not service.reserve_call(session, tenant_id, limit=limit, now=now):
            filled.notes.append(
                f"{BUDGET_EXHAUSTED}: the monthly budget of {limit} language-model calls is "
                f"spent; {', '.join(g.name for g in missing)} stay as OCR read them"
            )
            return found, None
    return found, _call(sessions, provider, config, replace(asking, gaps=missing), filled)


def _call(
    sessions: Callable[[], Session],
    provider: Provider,
    config: LlmConfig,
    asking: Asking,
    filled: Filled,
) -> dict[str, Any] | None:
    """The provider's answer for `asking.gaps` (stored in the cache, nulls included, and
    recorded in the ledger); None when it failed (recorded, and said in `filled.notes`)."""
    tenant_id, base, names = asking.tenant_id, asking.base, [g.name for g in asking.gaps]
    built = prompt.build(asking.definition, asking.gaps, asking.request.lines)
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
            f"{UNAVAILABLE}: {provider.name} failed ({exc}); {', '.join(names)} stay as OCR "
            "read them"
        )
        log.warning("llm.unavailable", provider=provider.name, error=str(exc))
        return None
    latency = (time.perf_counter() - started) * 1000
    values = {name: service.answer_json(answer.values).get(name) for name in names}
    done = replace(base, usage=answer.usage, latency_ms=latency, attempts=attempts)
    with sessions() as session, session.begin():
        now = utcnow()
        service.record_call(session, tenant_id, config, done, now=now)
        service.store_answers(
            session,
            tenant_id,
            keys={name: asking.keys[name] for name in names},
            model=base.model,
            values=values,
            now=now,
            ttl_seconds=config.cache_ttl_seconds,
        )
    filled.summary["calls"] += 1
    _count(filled.summary, answer.usage)
    return values


def _count(summary: dict[str, Any], usage: Usage) -> None:
    for name in ("input_tokens", "cached_tokens", "output_tokens"):
        summary[name] = summary.get(name, 0) + getattr(usage, name)


def _status(filled: Filled) -> str:
    if any(note.startswith(BUDGET_EXHAUSTED) for note in filled.notes):
        return BUDGET_EXHAUSTED
    if any(note.startswith(UNAVAILABLE) for note in filled.notes):
        return UNAVAILABLE
    return "filled"
