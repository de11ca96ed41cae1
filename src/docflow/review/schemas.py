"""Review requests and answers."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from docflow.documents.schemas import DocumentRead

if TYPE_CHECKING:
    from docflow.review.service import Recorded


class ClaimRead(BaseModel):
    """A reviewer's claim on a document: theirs until `expires_at`."""

    model_config = ConfigDict(from_attributes=True)

    document_id: str
    reviewer: str = Field(description="the user, else the API key, that holds the claim")
    claimed_at: datetime
    expires_at: datetime


class ClaimedDocument(BaseModel):
    """The document handed out by the review queue, with the claim taken on it; both null when
    no document is waiting for review."""

    document: DocumentRead | None
    claim: ClaimRead | None


class ReviewCreate(BaseModel):
    """A decision on a claimed document, with corrected values by field name."""

    model_config = ConfigDict(extra="forbid")

    fields: dict[str, str | None] = Field(
        default_factory=dict,
        max_length=200,
        description="corrected values, parsed as the workflow version's field types "
        "(e.g. money `12.50`, ISO or printed dates); null clears a value",
    )
    decision: Literal["approve", "reject"]
    reason: str = Field(default="", max_length=2000, description="why; required to reject")


class FieldCorrectionRead(BaseModel):
    """One corrected field: what the document held before the review, and the new value."""

    model_config = ConfigDict(from_attributes=True)

    field: str
    original_value: str | None
    original_confidence: float | None
    corrected_value: str | None


class ReviewRead(BaseModel):
    """One review of a document, as recorded (never changed afterwards)."""

    id: str
    document_id: str
    decision: str
    reason: str
    reviewer: str
    status_before: str
    status_after: str
    created_at: datetime
    fields: list[FieldCorrectionRead]

    @classmethod
    def of(cls, recorded: Recorded) -> ReviewRead:
        r = recorded.review
        return cls(
            id=r.id,
            document_id=r.document_id,
            decision=r.decision,
            reason=r.reason,
            reviewer=r.reviewer,
            status_before=r.status_before,
            status_after=r.status_after,
            created_at=r.created_at,
            fields=[FieldCorrectionRead.model_validate(f) for f in recorded.fields],
        )


class ReviewList(BaseModel):
    """A page of a document's reviews, oldest first."""

    items: list[ReviewRead]
    next_cursor: str | None


class ReviewedDocument(BaseModel):
    """The document after the review, and the review as recorded."""

    document: DocumentRead
    review: ReviewRead
