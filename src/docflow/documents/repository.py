"""Queries for documents."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from docflow.documents.models import INDEXED_DOCUMENT_STATUSES, INDEXED_STATUS_PREDICATE, Document
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.tenancy import TenantRepository

BY_ID = (SortKey(Document.id),)
OLDEST_CHANGE_FIRST = (SortKey(Document.updated_at), SortKey(Document.id))


class DocumentRepository(TenantRepository):
    def get(self, document_id: str) -> Document | None:
        stmt = self.base(Document).where(Document.id == document_id)
        return self.session.scalars(stmt).first()

    def page_in_batch(
        self, batch_id: str, *, status: str | None, cursor: str | None, limit: int | None
    ) -> Page[Document]:
        """A batch's documents in id order: ix_documents_batch, or ix_documents_batch_status
        for the indexed statuses."""
        stmt = self.base(Document).where(Document.batch_id == batch_id)
        if status is not None:
            stmt = stmt.where(Document.status == status)
            if status in INDEXED_DOCUMENT_STATUSES:
                stmt = stmt.where(text(INDEXED_STATUS_PREDICATE))
        return keyset_page(self.session, stmt, order=BY_ID, cursor=cursor, limit=limit)

    def page_by_status(
        self, status: str, *, cursor: str | None, limit: int | None
    ) -> Page[Document]:
        """The tenant's documents in an indexed status, oldest change first
        (ix_documents_tenant_status)."""
        stmt = (
            self.base(Document)
            .where(Document.status == status)
            .where(text(INDEXED_STATUS_PREDICATE))
        )
        return keyset_page(
            self.session, stmt, order=OLDEST_CHANGE_FIRST, cursor=cursor, limit=limit
        )

    def in_batch(self, batch_id: str) -> list[Document]:
        stmt = self.base(Document).where(Document.batch_id == batch_id).order_by(Document.id)
        return list(self.session.scalars(stmt))

    def compare_and_set(self, document_id: str, *, expected_version: int, **values: Any) -> bool:
        """Apply `values` only if the document is still at `expected_version` (then bump it).

        True when this call won; False when someone changed the document first.
        """
        stmt = (
            self.scoped_update(Document)
            .where(Document.id == document_id, Document.version == expected_version)
            .values(version=expected_version + 1, **values)
            .execution_options(synchronize_session=False)
        )
        result = self.session.execute(stmt)
        return bool(getattr(result, "rowcount", 0) == 1)
