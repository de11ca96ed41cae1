"""The outbox (one row per event, published or not) and the consumers' dead letters.

Both are tenant data (row-level security on PostgreSQL). The publisher, which serves every
tenant, finds unpublished rows through `repository.unpublished` (a SECURITY DEFINER function on
PostgreSQL that returns only ids) and then reads each row under its tenant.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, JSONType, UTCDateTime


class OutboxEvent(Base):
    """An event written with the state change it reports; `published_at` is set once the
    publisher has handed it to every matching consumer."""

    __tablename__ = "outbox_events"

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    type: Mapped[str] = mapped_column(String(120))
    source: Mapped[str] = mapped_column(String(200))
    subject: Mapped[str] = mapped_column(String(200))
    data: Mapped[dict[str, Any]] = mapped_column(JSONType)
    occurred_at: Mapped[datetime] = mapped_column(UTCDateTime)
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The W3C trace context of the change that wrote it (traces on), for its consumers.
    traceparent: Mapped[str | None] = mapped_column(String(55), nullable=True, default=None)

    __table_args__ = (
        # The publisher's claim: unpublished rows in order (ids are time-ordered).
        Index(
            "ix_outbox_events_unpublished",
            "occurred_at",
            "id",
            postgresql_where=text("published_at IS NULL"),
            sqlite_where=text("published_at IS NULL"),
        ),
        # Replay: a tenant's events since a time.
        Index("ix_outbox_events_tenant_time", "tenant_id", "occurred_at", "id"),
        # A document's events (`documents/<id>`), for its webhook deliveries.
        Index("ix_outbox_events_subject", "tenant_id", "subject"),
    )


class DeadLetter(Base):
    """An event a consumer gave up on after its retries, with the last error; a redrive
    records who asked, when and why, and the workflow that delivered it again. `target` names
    what, within the consumer, the event could not reach (the webhook endpoint of a dead
    delivery); None when the consumer as a whole gave up."""

    __tablename__ = "event_dead_letters"

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    consumer: Mapped[str] = mapped_column(String(80))
    target: Mapped[str | None] = mapped_column(String(80), nullable=True)
    event_id: Mapped[str] = mapped_column(String(40))
    event_type: Mapped[str] = mapped_column(String(120))
    envelope: Mapped[dict[str, Any]] = mapped_column(JSONType)
    error: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(40))
    attempts: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    redriven_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    redriven_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    redrive_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    redrive_workflow_id: Mapped[str | None] = mapped_column(String(300), nullable=True)

    __table_args__ = (
        Index("ix_event_dead_letters_tenant_time", "tenant_id", "created_at", "id"),
        # The open letter of one (consumer, target, event): a redelivery settles it.
        Index("ix_event_dead_letters_target", "tenant_id", "consumer", "target", "event_id"),
        # The letters of given events (they go when their batch is deleted).
        Index("ix_event_dead_letters_event", "tenant_id", "event_id"),
    )
