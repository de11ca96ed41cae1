"""Queries for stored idempotent answers."""

from __future__ import annotations

from datetime import datetime

from docflow.idempotency.models import IdempotencyKey
from docflow.tenancy import TenantRepository


class IdempotencyRepository(TenantRepository):
    def get(self, key: str) -> IdempotencyKey | None:
        stmt = self.base(IdempotencyKey).where(IdempotencyKey.key == key)
        return self.session.scalars(stmt).first()

    def add(self, row: IdempotencyKey) -> None:
        """Insert `row` inside a SAVEPOINT, so a duplicate key fails alone (IntegrityError)
        and leaves the caller's transaction usable."""
        if row.tenant_id != self.tenant_id:
            raise ValueError("row of another tenant")
        with self.session.begin_nested():
            self.session.add(row)

    def delete_older_than(self, cutoff: datetime) -> int:
        """Forget the tenant's keys stored before `cutoff`; returns how many."""
        stmt = (
            self.scoped_delete(IdempotencyKey)
            .where(IdempotencyKey.created_at < cutoff)
            .execution_options(synchronize_session=False)
        )
        result = self.session.execute(stmt)
        return int(getattr(result, "rowcount", 0))
