"""Earned trust: the reviewed examples of each workflow version's fields, and the estimate the
last recalibration made of each field from them (`docflow.trust.estimate`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, ForeignKeyConstraint, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, UTCDateTime


class FieldEvidence(Base):
    """One reviewed value: the confidence the engine gave it and whether the review left it as
    it was (`correct`). One row per document and field, rebuilt from the document's reviews
    each time it is reviewed (`docflow.trust.evidence`)."""

    __tablename__ = "field_evidence"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "document_id"],
            ["documents.tenant_id", "documents.id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(
            ["tenant_id", "workflow_id"],
            ["extraction_workflows.tenant_id", "extraction_workflows.id"],
            ondelete="CASCADE",
        ),
        # "a version's examples of a field, oldest review first" (recalibration).
        Index(
            "ix_field_evidence_field",
            "tenant_id",
            "workflow_id",
            "workflow_version",
            "field",
            "reviewed_at",
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    field: Mapped[str] = mapped_column(String(64), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(String(40))
    workflow_version: Mapped[int] = mapped_column(Integer)
    confidence: Mapped[float] = mapped_column(Float)
    correct: Mapped[bool] = mapped_column(Boolean)
    reviewed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class FieldTrust(Base):
    """A field's estimate on one workflow version, as the last recalibration left it: the cut
    (None: the field goes to review), and the figures shown to the tenant. `drifted_at`: when
    the precision at the field's cut last fell below the target."""

    __tablename__ = "field_trust"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "workflow_id"],
            ["extraction_workflows.tenant_id", "extraction_workflows.id"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workflow_version: Mapped[int] = mapped_column(Integer, primary_key=True)
    field: Mapped[str] = mapped_column(String(64), primary_key=True)
    examples: Mapped[int] = mapped_column(Integer)
    correct: Mapped[int] = mapped_column(Integer)
    cut: Mapped[float | None] = mapped_column(Float, nullable=True)
    precision: Mapped[float | None] = mapped_column(Float, nullable=True)
    lower_bound: Mapped[float | None] = mapped_column(Float, nullable=True)
    automation_rate: Mapped[float] = mapped_column(Float)
    drifted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
