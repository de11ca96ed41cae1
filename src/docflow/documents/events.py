"""The events the documents domain emits, built from its own facts and written to the outbox
in the caller's transaction (`docflow.events.outbox.emit`): the document reached a terminal
status, one event type per outcome; its downstream state changed; it was deleted."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from docflow.documents.models import DocumentStatus
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import emit
from docflow.observability.metrics import DOCUMENTS, count_after_commit

_TYPES = {
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
    """The document reached a terminal status: its event, by outcome (and, once the
    transaction commits, one more on `docflow_documents`)."""
    count_after_commit(session, DOCUMENTS, status=outcome.status, code=outcome.error_code or "")
    return emit(
        session,
        tenant_id=outcome.tenant_id,
        type=_TYPES[outcome.status],
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


@dataclass(frozen=True, slots=True)
class DownstreamChange:
    """A completed document's recorded downstream state changed (`from_state` None: it had
    none recorded yet)."""

    tenant_id: str
    project_id: str
    batch_id: str
    document_id: str
    from_state: str | None
    to_state: str
    lagging: list[str]
    projections: dict[str, str]
    version: int


def downstream_changed(session: Session, change: DownstreamChange) -> OutboxEvent:
    """The event of a change of the document's downstream state, in the caller's transaction
    (the one that recorded the change)."""
    return emit(
        session,
        tenant_id=change.tenant_id,
        type=envelopes.DOCUMENT_DOWNSTREAM_CHANGED,
        subject=f"documents/{change.document_id}",
        data={
            "tenant_id": change.tenant_id,
            "project_id": change.project_id,
            "batch_id": change.batch_id,
            "document_id": change.document_id,
            "from_state": change.from_state,
            "to_state": change.to_state,
            "lagging": change.lagging,
            "projections": change.projections,
            "version": change.version,
            "link": f"/v1/documents/{change.document_id}",
        },
    )


@dataclass(frozen=True, slots=True)
class DocumentDeletion:
    """A document deleted with its files, results, search entry and the events about it."""

    tenant_id: str
    project_id: str
    batch_id: str
    document_id: str
    status: str
    event_count: int


def document_deleted(session: Session, deletion: DocumentDeletion) -> OutboxEvent:
    """The document was deleted with the `event_count` events about it (this one, written
    afterwards, is the only event about the document that stays): ids, its last status and
    counts, no link (nothing is left to read)."""
    return emit(
        session,
        tenant_id=deletion.tenant_id,
        type=envelopes.DOCUMENT_DELETED,
        subject=f"documents/{deletion.document_id}",
        data={
            "tenant_id": deletion.tenant_id,
            "project_id": deletion.project_id,
            "batch_id": deletion.batch_id,
            "document_id": deletion.document_id,
            "status": deletion.status,
            "event_count": deletion.event_count,
        },
    )
