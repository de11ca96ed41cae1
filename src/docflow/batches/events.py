"""The events the batches domain emits, built from its own rows and written to the outbox in
the caller's transaction (`docflow.events.outbox.emit`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from docflow.batches.models import Batch
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import emit


def batch_completed(session: Session, batch: Batch) -> OutboxEvent:
    """The batch reached its terminal status."""
    return emit(
        session,
        tenant_id=batch.tenant_id,
        type=envelopes.BATCH_COMPLETED,
        subject=f"batches/{batch.id}",
        data=_counts(batch),
    )


def batch_cancelled(session: Session, batch: Batch) -> OutboxEvent:
    """The batch was cancelled (its own type: `batch.completed.v1` promises a finished status;
    no event is written per cancelled document)."""
    return emit(
        session,
        tenant_id=batch.tenant_id,
        type=envelopes.BATCH_CANCELLED,
        subject=f"batches/{batch.id}",
        data={**_counts(batch), "cancelled_count": batch.cancelled_count},
    )


def batch_deleted(
    session: Session, batch: Batch, *, event_count: int, by_retention: bool
) -> OutboxEvent:
    """The batch was deleted with its documents and the `event_count` events about it (this
    one, written afterwards, is the only event about the batch that stays): ids and counts
    only, no link (nothing is left to read)."""
    return emit(
        session,
        tenant_id=batch.tenant_id,
        type=envelopes.BATCH_DELETED,
        subject=f"batches/{batch.id}",
        data={
            "tenant_id": batch.tenant_id,
            "project_id": batch.project_id,
            "batch_id": batch.id,
            "workflow_id": batch.workflow_id,
            "status": batch.status,
            "document_count": batch.document_count,
            "event_count": event_count,
            "by_retention": by_retention,
        },
    )


def _counts(batch: Batch) -> dict[str, Any]:
    return {
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
    }
