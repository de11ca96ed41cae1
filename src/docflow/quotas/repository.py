"""Quota queries: each a single statement, so concurrent API processes (and workers) cannot
both pass a limit that only one fits under."""

from __future__ import annotations

from sqlalchemy import func
from sqlalchemy.dialects import postgresql, sqlite

from docflow.db import is_postgres
from docflow.quotas.models import RateLimit, TenantUsage
from docflow.tenancy import TenantRepository


class UsageRepository(TenantRepository):
    def get(self, month: str) -> TenantUsage | None:
        stmt = self.base(TenantUsage).where(TenantUsage.month == month)
        return self.session.scalars(stmt).first()

    def add(
        self,
        month: str,
        *,
        documents: int = 0,
        pages: int = 0,
        max_documents: int | None = None,
    ) -> bool:
        """Add to the month's counters; with `max_documents`, only when the documents then
        stay within it (False, nothing added, otherwise). The row is locked until the commit."""
        dialect = postgresql if is_postgres(self.session) else sqlite
        insert = dialect.insert(TenantUsage).values(
            tenant_id=self.tenant_id, month=month, documents=documents, pages=pages
        )
        within = None
        if max_documents is not None:
            if documents > max_documents:
                return False
            within = TenantUsage.documents + documents <= max_documents
        stmt = insert.on_conflict_do_update(
            index_elements=["tenant_id", "month"],
            set_={
                "documents": TenantUsage.documents + documents,
                "pages": TenantUsage.pages + pages,
            },
            where=within,
        ).returning(TenantUsage.documents)
        return self.session.execute(stmt).first() is not None


class RateLimitRepository(TenantRepository):
    def take(self, key_id: str, *, now: float, interval: float, tolerance: float) -> float | None:
        """Admit one request of `key_id` at `now` under the generic cell rate (`interval`
        seconds per request, `tolerance` seconds of burst): its new theoretical arrival time,
        or None when the key is over its rate (nothing changed)."""
        dialect = postgresql if is_postgres(self.session) else sqlite
        ahead = func.greatest if is_postgres(self.session) else func.max
        start = ahead(RateLimit.tat, now)
        stmt = (
            dialect.insert(RateLimit)
            .values(tenant_id=self.tenant_id, key_id=key_id, tat=now + interval)
            .on_conflict_do_update(
                index_elements=["tenant_id", "key_id"],
                set_={"tat": start + interval},
                where=start - now <= tolerance,
            )
            .returning(RateLimit.tat)
        )
        found = self.session.execute(stmt).first()
        return float(found[0]) if found is not None else None

    def tat(self, key_id: str) -> float | None:
        stmt = self.base(RateLimit).where(RateLimit.key_id == key_id)
        found = self.session.scalars(stmt).first()
        return found.tat if found is not None else None
