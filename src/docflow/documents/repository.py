"""Queries for documents."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, text
from sqlalchemy.orm import aliased

from docflow.documents.models import (
    INDEXED_DOCUMENT_STATUSES,
    INDEXED_STATUS_PREDICATE,
    Document,
    DocumentStatus,
)
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.tenancy import TenantRepository

BY_ID = (SortKey(Document.id),)
OLDEST_CHANGE_FIRST = (SortKey(Document.updated_at), SortKey(Document.id))


class DocumentRepository(TenantRepository):
    def get(self, document_id: str, *, fresh: bool = False) -> Document | None:
        """The document; `fresh` re-reads one already loaded in the session (after a
        compare-and-set, which does not touch loaded objects)."""
        stmt = self.base(Document).where(Document.id == document_id)
        if fresh:
            stmt = stmt.execution_options(populate_existing=True)
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

    def status_counts(self, batch_id: str) -> dict[str, int]:
        """How many of the batch's documents are in each status (ix_documents_batch)."""
        stmt = (
            self.base(Document)
            .where(Document.batch_id == batch_id)
            .with_only_columns(Document.status, func.count())
            .group_by(Document.status)
        )
        return {status: int(count) for status, count in self.session.execute(stmt).all()}

    def in_batch(self, batch_id: str) -> list[Document]:
        stmt = self.base(Document).where(Document.batch_id == batch_id).order_by(Document.id)
        return list(self.session.scalars(stmt))

    def in_batch_with_ids(self, batch_id: str, document_ids: Sequence[str]) -> list[Document]:
        """The batch's documents among `document_ids` (the primary key; ix_documents_batch)."""
        if not document_ids:
            return []
        stmt = self.base(Document).where(
            Document.batch_id == batch_id, Document.id.in_(list(document_ids))
        )
        return list(self.session.scalars(stmt))

    def in_batch_with_sources(self, batch_id: str, source_ids: Sequence[str]) -> list[Document]:
        """The batch's documents re-running any of the uploads `source_ids`
        (ix_documents_batch_source)."""
        if not source_ids:
            return []
        stmt = self.base(Document).where(
            Document.batch_id == batch_id, Document.source_document_id.in_(list(source_ids))
        )
        return list(self.session.scalars(stmt))

    def page_not_rerun(
        self,
        batch_id: str,
        *,
        rerun_batch_id: str,
        keyed_by_source: bool,
        cursor: str | None,
        limit: int | None,
    ) -> Page[Document]:
        """The batch's documents in id order whose upload no document of `rerun_batch_id` (a
        re-run) runs: the upload is the document's `source_document_id` when
        `keyed_by_source` (the batch is a re-run too), else its id (ix_documents_batch; the
        re-run's side by ix_documents_batch_source)."""
        run = aliased(Document)
        upload = Document.source_document_id if keyed_by_source else Document.id
        runs = (
            self.base(run)
            .where(run.batch_id == rerun_batch_id, run.source_document_id == upload)
            .exists()
        )
        stmt = self.base(Document).where(Document.batch_id == batch_id, ~runs)
        return keyset_page(self.session, stmt, order=BY_ID, cursor=cursor, limit=limit)

    def mark_uploaded(
        self,
        document_id: str,
        *,
        storage_key: str,
        size: int,
        sha256: str,
        detected_type: str | None,
        now: datetime,
    ) -> Document | None:
        """Record the document's file if it is still PENDING_UPLOAD, bumping its version, in
        one statement; the document as it now is, or None when it was not waiting (or absent)."""
        stmt = (
            self.scoped_update(Document)
            .where(
                Document.id == document_id,
                Document.status == DocumentStatus.PENDING_UPLOAD.value,
            )
            .values(
                status=DocumentStatus.UPLOADED.value,
                storage_key=storage_key,
                size=size,
                sha256=sha256,
                detected_type=detected_type,
                uploaded_at=now,
                updated_at=now,
                version=Document.version + 1,
            )
            .returning(Document)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

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
