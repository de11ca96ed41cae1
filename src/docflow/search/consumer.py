"""The search consumer of the event registry: every document event (and a batch's
cancellation) brings the entries of its documents up to the documents as they are now."""

from __future__ import annotations

from sqlalchemy.orm import Session

from docflow.events.consumers import register_consumer
from docflow.events.envelopes import (
    BATCH_CANCELLED,
    DOCUMENT_COMPLETED,
    DOCUMENT_FAILED,
    DOCUMENT_NEEDS_REVIEW,
    DOCUMENT_REVIEWED,
    Envelope,
)
from docflow.search import steps

CONSUMER_NAME = "search"
EVENT_TYPES = frozenset(
    {DOCUMENT_COMPLETED, DOCUMENT_FAILED, DOCUMENT_NEEDS_REVIEW, DOCUMENT_REVIEWED, BATCH_CANCELLED}
)

__all__ = ["CONSUMER_NAME", "EVENT_TYPES", "handles", "register"]


def handles(session: Session, envelope: Envelope) -> bool:
    """Every event that changes a document the index holds."""
    return envelope.type in EVENT_TYPES


def register() -> None:
    """Register (or replace) the search consumer."""
    register_consumer(
        CONSUMER_NAME,
        handles=handles,
        handler=steps.project,
        max_attempts=5,
        concurrency=4,
        backoff_seconds=1.0,
    )


register()
