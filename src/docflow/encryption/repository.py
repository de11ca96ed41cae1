"""Queries for a tenant's data keys, and for the stored objects its documents hold."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func

from docflow.documents.keys import words_key
from docflow.documents.models import Document
from docflow.encryption.models import ACTIVE, RETIRED, DataKeyRow
from docflow.tenancy import TenantRepository


class DataKeyRepository(TenantRepository):
    def active(self) -> DataKeyRow | None:
        stmt = self.base(DataKeyRow).where(DataKeyRow.state == ACTIVE)
        return self.session.scalars(stmt).first()

    def get(self, version: int) -> DataKeyRow | None:
        stmt = self.base(DataKeyRow).where(DataKeyRow.version == version)
        return self.session.scalars(stmt).first()

    def all(self) -> list[DataKeyRow]:
        return list(self.session.scalars(self.base(DataKeyRow).order_by(DataKeyRow.version)))

    def latest_version(self) -> int:
        stmt = self.base(DataKeyRow).with_only_columns(func.max(DataKeyRow.version))
        return int(self.session.scalar(stmt) or 0)

    def add(self, row: DataKeyRow) -> None:
        self.session.add(row)
        self.session.flush()

    def retire_active(self) -> None:
        stmt = (
            self.scoped_update(DataKeyRow)
            .where(DataKeyRow.state == ACTIVE)
            .values(state=RETIRED)
            .execution_options(synchronize_session=False)
        )
        self.session.execute(stmt)
        self.session.flush()

    def rewrap(self, version: int, *, wrapped_key: bytes, kek_id: str, now: datetime) -> None:
        stmt = (
            self.scoped_update(DataKeyRow)
            .where(DataKeyRow.version == version)
            .values(wrapped_key=wrapped_key, kek_id=kek_id, rewrapped_at=now)
            .execution_options(synchronize_session=False)
        )
        self.session.execute(stmt)


class StoredObjectRepository(TenantRepository):
    def keys(self) -> list[str]:
        """Every storage key the tenant's documents hold (their recorded files, their stored
        results, the words of their pages), each once (a re-run shares its source's file),
        sorted. An upload a client POSTed straight to the bucket is not among them until it is
        taken into a key of its own: a document still waiting for its file records no key."""
        files = self.base(Document).with_only_columns(Document.storage_key)
        results = self.base(Document).with_only_columns(Document.result_ref)
        landed = self.base(Document).with_only_columns(Document.id)
        found = {str(k) for k in self.session.scalars(files) if k is not None}
        found |= {str(k) for k in self.session.scalars(results) if k is not None}
        # Every landed document's words key, kept or not (`is_words_key`: not kept is no loss).
        landed = landed.where(Document.storage_key.is_not(None))
        found |= {words_key(self.tenant_id, str(i)) for i in self.session.scalars(landed)}
        return sorted(found)
