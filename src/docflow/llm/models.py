"""The gap-fill's tables, all tenant data: the cost ledger (one row per call or cache hit),
the result cache, and the calls counted against each month's budget."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Boolean, Float, Index, Integer, Numeric, String
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, JSONType, UTCDateTime


class LlmCall(Base):
    """One call to a provider, or one answer served from the cache (`cache_hit`, no tokens)."""

    __tablename__ = "llm_calls"
    __table_args__ = (
        # "a tenant's usage over a period", "... of a project"
        Index("ix_llm_calls_created", "tenant_id", "created_at"),
        Index("ix_llm_calls_project", "tenant_id", "project_id", "created_at"),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(40))
    batch_id: Mapped[str] = mapped_column(String(40))
    document_id: Mapped[str] = mapped_column(String(40))
    task: Mapped[str] = mapped_column(String(16))
    provider: Mapped[str] = mapped_column(String(16))
    model: Mapped[str] = mapped_column(String(200))
    tier: Mapped[str] = mapped_column(String(16))
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cached_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    cost: Mapped[Decimal] = mapped_column(Numeric(18, 6), default=Decimal(0))
    cache_hit: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    error: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LlmResult(Base):
    """A provider's answer, reused until `expires_at` for the same key (see `service.key`)."""

    __tablename__ = "llm_results"
    # "a tenant's expired answers" (deleted when the next one is stored)
    __table_args__ = (Index("ix_llm_results_expires", "tenant_id", "expires_at"),)

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    answer: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LlmBudgetMonth(Base):
    """Calls reserved by a tenant in a calendar month (`YYYY-MM`, UTC), and when the 80%
    warning was emitted."""

    __tablename__ = "llm_budget_months"

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    warned_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
