"""Plans and quotas as use cases: which plan a tenant is on, whether a batch fits in its month,
counting the pages it read, and what it has used (`GET /v1/usage`).

Monthly quotas count what a tenant asked for: a batch's declared documents when it is created
(refused whole when they do not fit, 429 `quota_exceeded` naming the quota), pages as the
pipeline reads them (a batch that is already running is never cut short: once the pages of the
month are used up, new batches are refused). Months are calendar months in UTC.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dbos import DBOSClient
from sqlalchemy.orm import Session

from docflow.config import DEFAULT_PLAN, Plan, Settings
from docflow.errors import DomainError
from docflow.kit.clock import utcnow
from docflow.quotas.repository import UsageRepository
from docflow.runtime.context import DOCUMENTS_QUEUE
from docflow.tenancy import TenantContext
from docflow.tenants.service import get_tenant

# How long a process trusts the plan it read for a tenant (a changed plan applies within it).
PLAN_TTL_SECONDS = 30.0


class QuotaExceeded(DomainError):
    """A monthly quota of the tenant's plan is used up (`quota` names it). The answer says when
    it resets: `reset_at`, and `Retry-After` in seconds until then."""

    code = "quota_exceeded"
    status = 429
    title = "Quota exceeded"

    def __init__(self, detail: str, *, now: datetime, **extra: Any) -> None:
        reset = next_month(now)
        super().__init__(detail, reset_at=reset.isoformat(), **extra)
        wait = max(1, math.ceil((reset - now).total_seconds()))
        self.headers = {"Retry-After": str(wait)}


def month_of(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m")


def next_month(moment: datetime) -> datetime:
    start = moment.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )


class _PlanCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: dict[str, tuple[str, float]] = {}

    def get(self, tenant_id: str) -> str | None:
        with self._lock:
            found = self._plans.get(tenant_id)
        if found is None or time.monotonic() - found[1] > PLAN_TTL_SECONDS:
            return None
        return found[0]

    def put(self, tenant_id: str, plan: str) -> None:
        with self._lock:
            if len(self._plans) > 100_000:
                self._plans.clear()
            self._plans[tenant_id] = (plan, time.monotonic())


_plans = _PlanCache()


def plan_name(session: Session, tenant_id: str) -> str:
    """The name of the tenant's plan (read at most every `PLAN_TTL_SECONDS` per process)."""
    name = _plans.get(tenant_id)
    if name is None:
        name = get_tenant(session, tenant_id).plan
        _plans.put(tenant_id, name)
    return name


def charge_batch(session: Session, tenant: TenantContext, *, documents: int, plan: Plan) -> None:
    """Count a new batch's `documents` in the tenant's month, in the caller's transaction (its
    row stays locked until the commit: call it last); QuotaExceeded, nothing counted, when the
    documents or the pages of the month are used up by it."""
    now = utcnow()
    month = month_of(now)
    repo = UsageRepository(session, tenant.tenant_id)
    if plan.pages_per_month is not None:
        used = repo.get(month)
        if used is not None and used.pages >= plan.pages_per_month:
            raise QuotaExceeded(
                f"the {plan.pages_per_month} pages of this month's plan are used up",
                quota="pages_per_month",
                limit=plan.pages_per_month,
                now=now,
            )
    if not repo.add(month, documents=documents, max_documents=plan.documents_per_month):
        raise QuotaExceeded(
            f"{documents} more documents would pass this month's "
            f"{plan.documents_per_month} of the plan",
            field="documents",
            quota="documents_per_month",
            limit=plan.documents_per_month,
            now=now,
        )


def count_pages(session: Session, tenant_id: str, *, pages: int) -> None:
    """Count `pages` read for the tenant this month, in the caller's transaction."""
    if pages > 0:
        UsageRepository(session, tenant_id).add(month_of(utcnow()), pages=pages)


def max_batch_documents(settings: Settings, plan: Plan) -> int:
    """The most documents one batch of a tenant on `plan` may declare."""
    cap = settings.max_documents_per_batch
    return min(cap, plan.max_batch_documents) if plan.max_batch_documents else cap


def plan_queue(settings: Settings, name: str) -> str:
    """The queue the documents of a tenant on plan `name` run on: the plan's own
    (`documents:<plan>`) when it bounds its tenants' running documents or reserves worker
    slots, else the shared documents queue. A name the plans lack is the default plan's."""
    if name not in settings.plans:
        name = DEFAULT_PLAN
    return f"{DOCUMENTS_QUEUE}:{name}" if settings.plans[name].own_queue else DOCUMENTS_QUEUE


def documents_queue(session: Session, settings: Settings, tenant_id: str) -> str:
    """The queue the tenant's documents are enqueued on now (see `plan_queue`)."""
    return plan_queue(settings, plan_name(session, tenant_id))


def running_documents(client: DBOSClient, tenant_id: str, queues: list[str]) -> int:
    """How many of the tenant's document flows are running (claimed by a worker, not yet
    finished) on `queues`: DBOS's own count, the one a plan's `concurrent_documents` bounds.
    At most `max_concurrency` flows run per queue, so the read is bounded."""
    running = client.list_workflows(
        status="PENDING", queue_name=queues, load_input=False, load_output=False
    )
    return sum(1 for flow in running if flow.queue_partition_key == tenant_id)


@dataclass(frozen=True)
class Usage:
    plan: str
    limits: Plan
    month: str
    documents: int
    pages: int
    resets_at: datetime
    running_documents: int


def usage(session: Session, client: DBOSClient, tenant: TenantContext, settings: Settings) -> Usage:
    """The tenant's plan, its limits, this month's consumption and its documents running now
    (on its plan's queue and the shared one, where documents enqueued before a plan change
    still run)."""
    name = get_tenant(session, tenant.tenant_id).plan
    now = utcnow()
    found = UsageRepository(session, tenant.tenant_id).get(month_of(now))
    queues = sorted({DOCUMENTS_QUEUE, plan_queue(settings, name)})
    return Usage(
        plan=name,
        limits=settings.plan(name),
        month=month_of(now),
        documents=found.documents if found else 0,
        pages=found.pages if found else 0,
        resets_at=next_month(now),
        running_documents=running_documents(client, tenant.tenant_id, queues),
    )
