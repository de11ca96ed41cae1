"""The `trust` consumer of the event registry: each review (`docflow.document.reviewed.v1`)
makes the document examples of its workflow version and recalibrates that version's fields
(`steps.learn_from_review`), off the review's request path. With DOCFLOW_LEARNING off it does
nothing."""

from __future__ import annotations

from sqlalchemy.orm import Session

from docflow.events.consumers import register_consumer
from docflow.events.envelopes import DOCUMENT_REVIEWED, Envelope
from docflow.trust import steps

CONSUMER_NAME = "trust"

__all__ = ["CONSUMER_NAME", "handles", "register"]


def handles(session: Session, envelope: Envelope) -> bool:
    """Every review."""
    return envelope.type == DOCUMENT_REVIEWED


def register() -> None:
    """Register (or replace) the trust consumer. One at a time per worker: recalibrations of
    one workflow version would otherwise race on its estimates (a loser is retried)."""
    register_consumer(
        CONSUMER_NAME,
        handles=handles,
        handler=steps.learn_from_review,
        max_attempts=5,
        concurrency=1,
        backoff_seconds=1.0,
    )


register()
