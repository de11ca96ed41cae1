"""Queries for the ledger, the result cache and the monthly budgets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Integer, cast, func
from sqlalchemy.dialects import postgresql, sqlite

from docflow.db import is_postgres
from docflow.llm.models import LlmBudgetMonth, LlmCall, LlmResult
from docflow.tenancy import TenantRepository


@dataclass(frozen=True, slots=True)
class UsageRow:
    """The calls of one day and model: `calls` made to the provider (failed ones included),
    and `cache_hits`, the answers served from the result cache instead (no call)."""

    day: str
    model: str
    provider: str
    calls: int
    cache_hits: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cost: Decimal


class LlmRepository(TenantRepository):
    def _insert(self, model: type[Any]) -> Any:
        return (postgresql if is_postgres(self.session) else sqlite).insert(model)

    def cached(self, keys: list[str], *, now: datetime) -> dict[str, dict[str, Any]]:
        """The answers stored under `keys` that have not expired, by key."""
        stmt = self.base(LlmResult).where(LlmResult.key.in_(keys), LlmResult.expires_at > now)
        return {row.key: dict(row.answer) for row in self.session.scalars(stmt)}

    def store(
        self, key: str, *, model: str, answer: dict[str, Any], now: datetime, expires_at: datetime
    ) -> None:
        """Store (or replace) the answer under `key`."""
        values = {"model": model, "answer": answer, "created_at": now, "expires_at": expires_at}
        stmt = self._insert(LlmResult).values(tenant_id=self.tenant_id, key=key, **values)
        stmt = stmt.on_conflict_do_update(index_elements=["tenant_id", "key"], set_=values)
        self.session.execute(stmt)

    def forget_expired(self, *, now: datetime) -> int:
        """Delete the tenant's answers expired by `now` (ix_llm_results_expires); how many."""
        stmt = (
            self.scoped_delete(LlmResult)
            .where(LlmResult.expires_at <= now)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0))

    def record(self, call: LlmCall) -> None:
        call.tenant_id = self.tenant_id
        self.session.add(call)

    def reserve(self, month: str, *, limit: int) -> int | None:
        """Count one more call in `month` if fewer than `limit` were counted: the count
        afterwards, None when the budget is spent. One conditional UPDATE: on PostgreSQL its
        row lock makes concurrent reservations wait and re-check, so none passes `limit`."""
        self.session.execute(
            self._insert(LlmBudgetMonth)
            .values(tenant_id=self.tenant_id, month=month, calls=0)
            .on_conflict_do_nothing(index_elements=["tenant_id", "month"])
        )
        stmt = (
            self.scoped_update(LlmBudgetMonth)
            .where(LlmBudgetMonth.month == month, LlmBudgetMonth.calls < limit)
            .values(calls=LlmBudgetMonth.calls + 1)
            .returning(LlmBudgetMonth.calls)
        )
        return self.session.execute(stmt).scalar_one_or_none()

    def mark_warned(self, month: str, *, now: datetime) -> bool:
        """Record the month's warning once: True for the one caller that recorded it."""
        stmt = (
            self.scoped_update(LlmBudgetMonth)
            .where(LlmBudgetMonth.month == month, LlmBudgetMonth.warned_at.is_(None))
            .values(warned_at=now)
            .returning(LlmBudgetMonth.month)
        )
        return self.session.execute(stmt).first() is not None

    def calls_in(self, month: str) -> int:
        stmt = self.base(LlmBudgetMonth).where(LlmBudgetMonth.month == month)
        row = self.session.scalars(stmt).first()
        return row.calls if row else 0

    def usage(
        self, *, since: datetime | None, until: datetime | None, project_id: str | None
    ) -> list[UsageRow]:
        """The tenant's calls grouped by UTC day and model, oldest day first."""
        day = (
            func.to_char(func.timezone("UTC", LlmCall.created_at), "YYYY-MM-DD")
            if is_postgres(self.session)
            else func.substr(LlmCall.created_at, 1, 10)
        )
        stmt = self.base(LlmCall).with_only_columns(
            day.label("day"),
            LlmCall.model,
            LlmCall.provider,
            func.count(),
            func.sum(cast(LlmCall.cache_hit, Integer)),
            func.sum(LlmCall.input_tokens),
            func.sum(LlmCall.cached_tokens),
            func.sum(LlmCall.output_tokens),
            func.sum(LlmCall.cost),
        )
        if project_id is not None:
            stmt = stmt.where(LlmCall.project_id == project_id)
        if since is not None:
            stmt = stmt.where(LlmCall.created_at >= since)
        if until is not None:
            stmt = stmt.where(LlmCall.created_at < until)
        stmt = stmt.group_by("day", LlmCall.model, LlmCall.provider).order_by("day", LlmCall.model)
        return [
            UsageRow(
                day=str(r[0]),
                model=r[1],
                provider=r[2],
                calls=int(r[3]) - int(r[4] or 0),  # ledger rows less the cache hits
                cache_hits=int(r[4] or 0),
                input_tokens=int(r[5] or 0),
                cached_tokens=int(r[6] or 0),
                output_tokens=int(r[7] or 0),
                cost=Decimal(str(r[8] or 0)),
            )
            for r in self.session.execute(stmt)
        ]

    def calls_of_document(self, document_id: str) -> list[LlmCall]:
        stmt = self.base(LlmCall).where(LlmCall.document_id == document_id).order_by(LlmCall.id)
        return list(self.session.scalars(stmt))
