"""Batches: a set of documents run through one pinned version of an extraction workflow."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, ForeignKeyConstraint, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from docflow.db import Base, UTCDateTime
from docflow.documents.models import Document
from docflow.kit.clock import utcnow


class BatchStatus(StrEnum):
    CREATED = "CREATED"  # waiting for uploads (or for scheduled_for)
    PROCESSING = "PROCESSING"
    SUCCEEDED = "SUCCEEDED"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    PARTIALLY_FAILED = "PARTIALLY_FAILED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"  # `POST /v1/batches/{id}/cancel`: its unfinished documents too


TERMINAL_BATCH_STATUSES = frozenset(
    {
        BatchStatus.SUCCEEDED,
        BatchStatus.REVIEW_REQUIRED,
        BatchStatus.PARTIALLY_FAILED,
        BatchStatus.FAILED,
        BatchStatus.CANCELLED,
    }
)


class Batch(Base):
    __tablename__ = "batches"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "project_id"], ["projects.tenant_id", "projects.id"], ondelete="CASCADE"
        ),
        ForeignKeyConstraint(
            ["tenant_id", "workflow_id", "workflow_version"],
            [
                "extraction_workflow_versions.tenant_id",
                "extraction_workflow_versions.workflow_id",
                "extraction_workflow_versions.version",
            ],
        ),
        CheckConstraint(
            "status IN ({})".format(", ".join(f"'{s.value}'" for s in BatchStatus)),
            name="status",
        ),
        # "get a batch by id": the pipeline knows only the id (then reads under its tenant).
        Index("ux_batches_id", "id", unique=True),
        # "list a tenant's batches by status and date" / "... by date" (keyset on created_at, id).
        Index("ix_batches_status_created", "tenant_id", "status", "created_at", "id"),
        Index("ix_batches_created", "tenant_id", "created_at", "id"),
        # "a project's / a workflow's batches by date" (filters of the listing; a project's
        # batches when it is deleted with them).
        Index("ix_batches_project_created", "tenant_id", "project_id", "created_at", "id"),
        Index("ix_batches_workflow_created", "tenant_id", "workflow_id", "created_at", "id"),
        # The scheduler's "batches still waiting whose time has come" (cross-tenant, small).
        Index(
            "ix_batches_waiting_scheduled",
            "scheduled_for",
            sqlite_where=text("status = 'CREATED'"),
            postgresql_where=text("status = 'CREATED'"),
        ),
        Index(
            "ix_batches_waiting_deadline",
            "upload_deadline",
            sqlite_where=text("status = 'CREATED'"),
            postgresql_where=text("status = 'CREATED'"),
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(40))
    workflow_id: Mapped[str] = mapped_column(String(40))
    workflow_version: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32), default=BatchStatus.CREATED.value)
    document_count: Mapped[int] = mapped_column(Integer, default=0)
    uploaded_count: Mapped[int] = mapped_column(Integer, default=0)
    succeeded_count: Mapped[int] = mapped_column(Integer, default=0)
    review_count: Mapped[int] = mapped_column(Integer, default=0)
    failed_count: Mapped[int] = mapped_column(Integer, default=0)
    # Documents ended CANCELLED by the batch's cancellation (not yet terminal then).
    cancelled_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    scheduled_for: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    upload_deadline: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Compare-and-set counter: updates say `WHERE version = :seen` and bump it.
    version: Mapped[int] = mapped_column(Integer, default=1)
    # The batch this one re-runs (`POST /v1/batches/{id}/rerun`); None for an uploaded batch.
    # No foreign key: a re-run stands on its own rows and the stored files, whatever happens
    # to the batch it came from.
    rerun_of: Mapped[str | None] = mapped_column(String(40), default=None)
    # The W3C trace context of the request that created the batch (traces on): its execution,
    # however it is started, joins that trace.
    traceparent: Mapped[str | None] = mapped_column(String(55), default=None)

    # Loaded on access, through the (tenant_id, batch_id) key; ordered like the API lists them.
    documents: Mapped[list[Document]] = relationship(order_by=Document.id)
