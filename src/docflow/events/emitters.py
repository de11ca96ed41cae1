"""The events of docflow's state changes, built from the rows they report (called by the
services and steps that make the change, in their transaction)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from docflow.batches.models import Batch
from docflow.documents.models import DocumentStatus
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import emit

_DOCUMENT_TYPES = {
    DocumentStatus.SUCCEEDED.value: envelopes.DOCUMENT_COMPLETED,
    DocumentStatus.FAILED.value: envelopes.DOCUMENT_FAILED,
    DocumentStatus.REVIEW_REQUIRED.value: envelopes.DOCUMENT_NEEDS_REVIEW,
}


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    """The facts of a document that just reached a terminal status."""

    tenant_id: str
    project_id: str
    batch_id: str
    document_id: str
    workflow_id: str
    workflow_version: int
    status: str
    error_code: str | None
    confidence: float | None
    version: int


def document_outcome(session: Session, outcome: DocumentOutcome) -> OutboxEvent:
    """The document reached a terminal status: one event type per outcome."""
    return emit(
        session,
        tenant_id=outcome.tenant_id,
        type=_DOCUMENT_TYPES[outcome.status],
        subject=f"documents/{outcome.document_id}",
        data={
            "tenant_id": outcome.tenant_id,
            "project_id": outcome.project_id,
            "batch_id": outcome.batch_id,
            "document_id": outcome.document_id,
            "workflow_id": outcome.workflow_id,
            "workflow_version": outcome.workflow_version,
            "status": outcome.status,
            "error_code": outcome.error_code,
            "confidence": outcome.confidence,
            "version": outcome.version,
            "link": f"/v1/documents/{outcome.document_id}",
        },
    )


def batch_completed(session: Session, batch: Batch) -> OutboxEvent:
    """The batch reached its terminal status."""
    return emit(
        session,
        tenant_id=batch.tenant_id,
        type=envelopes.BATCH_COMPLETED,
        subject=f"batches/{batch.id}",
        data={
            "tenant_id": batch.tenant_id,
            "project_id": batch.project_id,
            "batch_id": batch.id,
            "workflow_id": batch.workflow_id,
            "workflow_version": batch.workflow_version,
            "status": batch.status,
            "document_count": batch.document_count,
            "succeeded_count": batch.succeeded_count,
            "review_count": batch.review_count,
            "failed_count": batch.failed_count,
            "version": batch.version,
            "link": f"/v1/batches/{batch.id}",
        },
    )


def workflow_published(
    session: Session,
    *,
    tenant_id: str,
    project_id: str,
    workflow_id: str,
    name: str,
    version: int,
    schema_hash: str,
) -> OutboxEvent:
    """A version of an extraction workflow was published (version 1 at creation)."""
    return emit(
        session,
        tenant_id=tenant_id,
        type=envelopes.WORKFLOW_PUBLISHED,
        subject=f"workflows/{workflow_id}",
        data={
            "tenant_id": tenant_id,
            "project_id": project_id,
            "workflow_id": workflow_id,
            "name": name,
            "version": version,
            "schema_hash": schema_hash,
            "link": f"/v1/workflows/{workflow_id}",
        },
    )
