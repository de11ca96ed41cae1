"""Human review: who holds a document for review (a lease), and the append-only audit trail of
every decision and every corrected field."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, Float, ForeignKeyConstraint, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, UTCDateTime


class Decision(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"


class ReviewClaim(Base):
    """A reviewer's lease on a document: theirs until `expires_at` (compared at read time, so
    an expired claim needs no sweeper: the next claimant takes the row over)."""

    __tablename__ = "review_claims"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "document_id"],
            ["documents.tenant_id", "documents.id"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    reviewer: Mapped[str] = mapped_column(String(200))
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)

    def active(self, now: datetime) -> bool:
        return self.expires_at > now


class DocumentReview(Base):
    """One decision on a document, by whom, when and why (never changed once written)."""

    __tablename__ = "document_reviews"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "document_id"],
            ["documents.tenant_id", "documents.id"],
            ondelete="CASCADE",
        ),
        CheckConstraint(
            "decision IN ({})".format(", ".join(f"'{d.value}'" for d in Decision)),
            name="decision",
        ),
        # "a document's reviews, in order".
        Index("ix_document_reviews_document", "tenant_id", "document_id", "id"),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(40))
    decision: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str] = mapped_column(Text)
    reviewer: Mapped[str] = mapped_column(String(200))
    status_before: Mapped[str] = mapped_column(String(32))
    status_after: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class DocumentReviewField(Base):
    """One field a review corrected: the value and confidence it had, and the value it got."""

    __tablename__ = "document_review_fields"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "review_id"],
            ["document_reviews.tenant_id", "document_reviews.id"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    review_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    field: Mapped[str] = mapped_column(String(64), primary_key=True)
    original_value: Mapped[str | None] = mapped_column(Text)
    original_confidence: Mapped[float | None] = mapped_column(Float)
    corrected_value: Mapped[str | None] = mapped_column(Text)
