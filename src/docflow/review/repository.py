"""Queries for review: claims, the queue of documents awaiting review, the audit trail."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import exists, text

from docflow.db import is_postgres
from docflow.documents.models import (
    INDEXED_STATUS_PREDICATE,
    REVIEWED_PREDICATE,
    Document,
    DocumentStatus,
)
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.review.models import DocumentReview, DocumentReviewField, ReviewClaim
from docflow.tenancy import TenantRepository

IN_ORDER = (SortKey(DocumentReview.id),)


class ReviewRepository(TenantRepository):
    def claim(self, document_id: str) -> ReviewClaim | None:
        """The document's claim row (active or expired), read afresh."""
        stmt = (
            self.base(ReviewClaim)
            .where(ReviewClaim.document_id == document_id)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def add_claim(self, claim: ReviewClaim) -> None:
        self.session.add(claim)
        self.session.flush()

    def drop_claim(self, document_id: str) -> None:
        stmt = self.scoped_delete(ReviewClaim).where(ReviewClaim.document_id == document_id)
        self.session.execute(stmt.execution_options(synchronize_session=False))

    def next_unclaimed(
        self, *, project_id: str | None, now: datetime, skip: Sequence[str]
    ) -> Document | None:
        """The oldest-changed document awaiting review with no active claim (none of `skip`),
        locked until the transaction ends: on PostgreSQL `FOR UPDATE SKIP LOCKED`, so
        concurrent callers pass over each other's candidates (on SQLite the write transaction
        holds the database). Served by ix_documents_tenant_status, or
        ix_documents_project_status with a project; each candidate's claim by its key."""
        claimed = (
            self.base(ReviewClaim)
            .where(ReviewClaim.document_id == Document.id, ReviewClaim.expires_at > now)
            .with_only_columns(ReviewClaim.document_id)
        )
        stmt = (
            self.base(Document)
            .where(Document.status == DocumentStatus.REVIEW_REQUIRED.value)
            .where(text(INDEXED_STATUS_PREDICATE))
            .where(~exists(claimed))
        )
        if project_id is not None:
            stmt = stmt.where(Document.project_id == project_id)
        if skip:
            stmt = stmt.where(Document.id.not_in(list(skip)))
        stmt = stmt.order_by(Document.updated_at, Document.id).limit(1)
        if is_postgres(self.session):
            stmt = stmt.with_for_update(skip_locked=True, of=Document)
        return self.session.scalars(stmt.execution_options(populate_existing=True)).first()

    def add_review(self, review: DocumentReview, fields: Sequence[DocumentReviewField]) -> None:
        self.session.add(review)
        self.session.flush()
        self.session.add_all(fields)
        self.session.flush()

    def page_reviews(
        self, document_id: str, *, cursor: str | None, limit: int | None
    ) -> Page[DocumentReview]:
        """A document's reviews, oldest first (ix_document_reviews_document)."""
        stmt = self.base(DocumentReview).where(DocumentReview.document_id == document_id)
        return keyset_page(self.session, stmt, order=IN_ORDER, cursor=cursor, limit=limit)

    def fields_of(self, review_ids: Sequence[str]) -> list[DocumentReviewField]:
        """The corrected fields of these reviews, by review then field (the primary key)."""
        if not review_ids:
            return []
        stmt = (
            self.base(DocumentReviewField)
            .where(DocumentReviewField.review_id.in_(list(review_ids)))
            .order_by(DocumentReviewField.review_id, DocumentReviewField.field)
        )
        return list(self.session.scalars(stmt))

    def recently_reviewed(self, workflow_id: str, *, limit: int) -> list[Document]:
        """The workflow's reviewed documents that stand approved (SUCCEEDED; a rejected one
        is FAILED), most recently reviewed first, at most `limit`
        (ix_documents_workflow_reviewed, read backwards)."""
        stmt = (
            self.base(Document)
            .where(Document.workflow_id == workflow_id)
            .where(text(REVIEWED_PREDICATE))
            .where(Document.status == DocumentStatus.SUCCEEDED.value)
            .order_by(Document.reviewed_at.desc(), Document.id.desc())
            .limit(limit)
        )
        return list(self.session.scalars(stmt))

    def corrected_fields(self, document_ids: Sequence[str]) -> set[tuple[str, str]]:
        """(document id, field) for every field some review of these documents changed (a
        value sent as it was is a confirmation; ix_document_reviews_document, then each
        review's fields by their primary key)."""
        if not document_ids:
            return set()
        stmt = (
            self.base(DocumentReviewField)
            .join(
                DocumentReview,
                (DocumentReview.tenant_id == DocumentReviewField.tenant_id)
                & (DocumentReview.id == DocumentReviewField.review_id),
            )
            .where(DocumentReview.document_id.in_(list(document_ids)))
            .where(
                DocumentReviewField.original_value.is_distinct_from(
                    DocumentReviewField.corrected_value
                )
            )
            .with_only_columns(DocumentReview.document_id, DocumentReviewField.field)
        )
        return {(document_id, field) for document_id, field in self.session.execute(stmt)}

    def field_history(self, document_id: str) -> list[tuple[str, str | None, float | None]]:
        """(field, original value, original confidence) of every field the document's reviews
        named, oldest review first (served by ix_document_reviews_document and the fields'
        primary key)."""
        stmt = (
            self.base(DocumentReviewField)
            .join(
                DocumentReview,
                (DocumentReview.tenant_id == DocumentReviewField.tenant_id)
                & (DocumentReview.id == DocumentReviewField.review_id),
            )
            .where(DocumentReview.document_id == document_id)
            .order_by(DocumentReview.created_at, DocumentReview.id)
            .with_only_columns(
                DocumentReviewField.field,
                DocumentReviewField.original_value,
                DocumentReviewField.original_confidence,
            )
        )
        return [(f, v, c) for f, v, c in self.session.execute(stmt)]
