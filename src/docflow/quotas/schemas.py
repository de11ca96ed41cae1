"""`GET /v1/usage`: the tenant's plan, its limits, and this month's consumption."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel


class PlanLimits(BaseModel):
    """The plan's limits; null: no limit."""

    requests_per_second: float | None
    burst: int
    documents_per_month: int | None
    pages_per_month: int | None
    max_batch_documents: int
    concurrent_documents: int | None
    reserved_slots: int


class MonthUsage(BaseModel):
    """What the tenant used this calendar month (UTC)."""

    month: str
    documents: int
    pages: int
    resets_at: datetime


class RunningUsage(BaseModel):
    """The tenant's documents running now (across every worker), against the plan's
    `concurrent_documents`."""

    documents: int
    limit: int | None


class UsageRead(BaseModel):
    plan: str
    limits: PlanLimits
    usage: MonthUsage
    running: RunningUsage
