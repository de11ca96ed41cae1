"""Queries for stored idempotent answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite

from docflow.db import is_postgres
from docflow.idempotency.models import IdempotencyKey
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantRepository


class IdempotencyRepository(TenantRepository):
    def get(self, key: str) -> IdempotencyKey | None:
        stmt = self.base(IdempotencyKey).where(IdempotencyKey.key == key)
        return self.session.scalars(stmt).first()

    def insert_new(self, key: str, *, fingerprint: str, status_code: int, body: Any) -> bool:
        """Store the answer for `key` unless the tenant already has that key: True when stored.

        One `INSERT ... ON CONFLICT DO NOTHING`: a duplicate (an earlier or a concurrent
        request's) is answered False without an error, so the caller's transaction stays usable
        and needs no savepoint.
        """
        dialect = postgresql if is_postgres(self.session) else sqlite
        stmt = (
            dialect.insert(IdempotencyKey)
            .values(
                tenant_id=self.tenant_id,
                key=key,
                request_fingerprint=fingerprint,
                status_code=status_code,
                response_body=body,
                created_at=utcnow(),
            )
            .on_conflict_do_nothing(index_elements=["tenant_id", "key"])
            .returning(IdempotencyKey.key)
        )
        return self.session.execute(stmt).first() is not None

    def delete_older_than(self, cutoff: datetime) -> int:
        """Forget the tenant's keys stored before `cutoff`; returns how many."""
        stmt = (
            self.scoped_delete(IdempotencyKey)
            .where(IdempotencyKey.created_at < cutoff)
            .execution_options(synchronize_session=False)
        )
        result = self.session.execute(stmt)
        return int(getattr(result, "rowcount", 0))
