"""The `documents` entry of the event registry: not a consumer of events (it handles none), but
the owner of the dead letters of documents that failed on an internal error
(`documents.service.fail_internal`), whose target is the document. Redriving one runs the
document again (`documents.service.redrive_document`)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from docflow.documents.service import DEAD_LETTER_CONSUMER, redrive_document
from docflow.events.consumers import ConsumerContext, register_consumer
from docflow.events.envelopes import Envelope

__all__ = ["handles", "register"]


def handles(session: Session, envelope: Envelope) -> bool:
    """No event: the publisher never hands this entry anything."""
    return False


def _handle(context: ConsumerContext, envelope: Envelope) -> None:
    """Never called (`handles` takes no event)."""


def register() -> None:
    """Register (or replace) the `documents` entry."""
    register_consumer(
        DEAD_LETTER_CONSUMER,
        handles=handles,
        handler=_handle,
        concurrency=1,
        redrive_target=redrive_document,
    )


register()
