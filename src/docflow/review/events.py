"""The events the review domain emits, written to the outbox in the caller's transaction."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import emit


@dataclass(frozen=True, slots=True)
class Reviewed:
    """The facts of a review just recorded: ids, the decision, the document's new status and
    the names (never the values) of the fields corrected."""

    tenant_id: str
    project_id: str
    batch_id: str
    document_id: str
    workflow_id: str
    workflow_version: int
    review_id: str
    decision: str
    status: str
    error_code: str | None
    reviewer: str
    corrected_fields: tuple[str, ...]
    version: int


def document_reviewed(session: Session, reviewed: Reviewed) -> OutboxEvent:
    """A person approved or rejected the document."""
    return emit(
        session,
        tenant_id=reviewed.tenant_id,
        type=envelopes.DOCUMENT_REVIEWED,
        subject=f"documents/{reviewed.document_id}",
        data={
            "tenant_id": reviewed.tenant_id,
            "project_id": reviewed.project_id,
            "batch_id": reviewed.batch_id,
            "document_id": reviewed.document_id,
            "workflow_id": reviewed.workflow_id,
            "workflow_version": reviewed.workflow_version,
            "review_id": reviewed.review_id,
            "decision": reviewed.decision,
            "status": reviewed.status,
            "error_code": reviewed.error_code,
            "reviewer": reviewed.reviewer,
            "corrected_fields": list(reviewed.corrected_fields),
            "version": reviewed.version,
            "link": f"/v1/documents/{reviewed.document_id}",
        },
    )
