"""Documents of a batch: declared metadata, what the upload and the pipeline found, the result."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, JSONType, UTCDateTime
from docflow.kit.clock import utcnow


class DocumentStatus(StrEnum):
    PENDING_UPLOAD = "PENDING_UPLOAD"
    UPLOADED = "UPLOADED"
    PROCESSING = "PROCESSING"
    SUCCEEDED = "SUCCEEDED"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"  # its batch was cancelled before it finished


TERMINAL_DOCUMENT_STATUSES = frozenset(
    {
        DocumentStatus.SUCCEEDED,
        DocumentStatus.REVIEW_REQUIRED,
        DocumentStatus.FAILED,
        DocumentStatus.CANCELLED,
    }
)

# Not yet done: what cancelling a batch ends CANCELLED.
UNFINISHED_DOCUMENT_STATUSES = (
    DocumentStatus.PENDING_UPLOAD,
    DocumentStatus.UPLOADED,
    DocumentStatus.PROCESSING,
)

# The statuses the partial status indexes cover: in flight, or needing someone's attention.
# SUCCEEDED, the bulk of all rows, is left out (the seed's sparse index).
INDEXED_DOCUMENT_STATUSES = (
    DocumentStatus.PENDING_UPLOAD,
    DocumentStatus.UPLOADED,
    DocumentStatus.PROCESSING,
    DocumentStatus.FAILED,
    DocumentStatus.REVIEW_REQUIRED,
)
# The partial indexes' predicate, verbatim: SQLite uses a partial index only when the query's
# WHERE repeats the index's terms, so the repository adds exactly this text.
INDEXED_STATUS_PREDICATE = "status IN ({})".format(
    ", ".join(f"'{s.value}'" for s in INDEXED_DOCUMENT_STATUSES)
)

# The predicate of the reviewed-documents index, verbatim (SQLite matches partial indexes by text).
REVIEWED_PREDICATE = "reviewed_at IS NOT NULL"


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "batch_id"], ["batches.tenant_id", "batches.id"], ondelete="CASCADE"
        ),
        CheckConstraint(
            "status IN ({})".format(", ".join(f"'{s.value}'" for s in DocumentStatus)),
            name="status",
        ),
        # "list documents of a batch" (keyset on id).
        Index("ix_documents_batch", "tenant_id", "batch_id", "id"),
        # "documents of a batch by status" for the in-flight and interesting statuses.
        Index(
            "ix_documents_batch_status",
            "tenant_id",
            "batch_id",
            "status",
            "id",
            sqlite_where=text(INDEXED_STATUS_PREDICATE),
            postgresql_where=text(INDEXED_STATUS_PREDICATE),
        ),
        # "a tenant's documents needing review" (and failed / stuck ones), oldest change first.
        Index(
            "ix_documents_tenant_status",
            "tenant_id",
            "status",
            "updated_at",
            "id",
            sqlite_where=text(INDEXED_STATUS_PREDICATE),
            postgresql_where=text(INDEXED_STATUS_PREDICATE),
        ),
        # "the documents of a batch that re-run these uploads" (a diff's counterparts).
        Index("ix_documents_batch_source", "tenant_id", "batch_id", "source_document_id"),
        # "the re-runs of an upload": is a stored file still referenced when a batch goes?
        Index("ix_documents_source", "tenant_id", "source_document_id"),
        # A tenant's documents, newest first (ids are time-ordered): by project, by workflow,
        # by status (the attention statuses; the rest read the primary key backwards).
        Index("ix_documents_project", "tenant_id", "project_id", "id"),
        Index("ix_documents_workflow", "tenant_id", "workflow_id", "id"),
        # "a workflow's reviewed documents, most recently reviewed first" (the labelled
        # examples a new version is measured on).
        Index(
            "ix_documents_workflow_reviewed",
            "tenant_id",
            "workflow_id",
            "reviewed_at",
            "id",
            sqlite_where=text(REVIEWED_PREDICATE),
            postgresql_where=text(REVIEWED_PREDICATE),
        ),
        # "a project's documents needing review", oldest change first (the review queue).
        Index(
            "ix_documents_project_status",
            "tenant_id",
            "project_id",
            "status",
            "updated_at",
            "id",
            sqlite_where=text(INDEXED_STATUS_PREDICATE),
            postgresql_where=text(INDEXED_STATUS_PREDICATE),
        ),
        # Every tenant's latest changes (the projection lag check of `/readyz`).
        Index("ix_documents_changed", "updated_at"),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    batch_id: Mapped[str] = mapped_column(String(40))
    # The batch's project and workflow, copied so a tenant's documents are found by them
    # without reading batches (null only in a database migrated while a batch was deleted).
    project_id: Mapped[str | None] = mapped_column(String(40), default=None)
    workflow_id: Mapped[str | None] = mapped_column(String(40), default=None)
    name: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(127))  # as declared by the client
    declared_size: Mapped[int] = mapped_column(BigInteger)
    size: Mapped[int | None] = mapped_column(BigInteger, default=None)  # as stored
    sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    detected_type: Mapped[str | None] = mapped_column(String(127), default=None)  # from bytes
    storage_key: Mapped[str | None] = mapped_column(String(512), default=None)
    status: Mapped[str] = mapped_column(String(32), default=DocumentStatus.PENDING_UPLOAD.value)
    error_code: Mapped[str | None] = mapped_column(String(64), default=None)
    error_reason: Mapped[str | None] = mapped_column(Text, default=None)
    confidence: Mapped[float | None] = mapped_column(Float, default=None)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    # Object-storage key of a result too large to keep inline.
    result_ref: Mapped[str | None] = mapped_column(String(512), default=None)
    uploaded_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # When a person last approved or rejected the document (`docflow.review`).
    reviewed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # Sent to review as a quality-assurance sample although it would have SUCCEEDED
    # (the workflow's `qa_sample_rate`, see `docflow.trust.gate`).
    qa_sample: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Compare-and-set counter: updates say `WHERE version = :seen` and bump it.
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # A re-run's document: the uploaded document whose stored file (`storage_key`, shared, never
    # copied) it processes again. Always the original upload, also for a re-run of a re-run, so
    # every run of one file has the same source. None for an uploaded document.
    source_document_id: Mapped[str | None] = mapped_column(String(40), default=None)


class AnnouncedState(StrEnum):
    """The downstream states a document's `docflow.document.downstream_changed.v1` events move
    it between (PENDING is a document catching up, never announced)."""

    READY = "READY"
    DEGRADED = "DEGRADED"


class DownstreamRecord(Base):
    """The downstream state last recorded for a completed document: written only by
    compare-and-set on `state` (`docflow.documents.downstream.announce`), each change with its
    event in the same transaction. The document's first state is recorded silently when READY
    and announced when DEGRADED."""

    __tablename__ = "document_downstream"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "document_id"],
            ["documents.tenant_id", "documents.id"],
            ondelete="CASCADE",
        ),
        CheckConstraint("state IN ('READY', 'DEGRADED')", name="state"),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))
    # The projections behind when the state was recorded (empty when READY).
    lagging: Mapped[list[str]] = mapped_column(JSONType, default=list)
    # The document's version the state was recorded for.
    version: Mapped[int] = mapped_column(Integer)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
