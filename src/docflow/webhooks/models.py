"""Webhook endpoints (per project), deliveries (one per event and endpoint) and their attempts
(the delivery log a tenant reads)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, JSONType, UTCDateTime
from docflow.kit.clock import utcnow

ENDPOINT_PREFIX = "whe"
DELIVERY_PREFIX = "whd"
ATTEMPT_PREFIX = "wha"


class DeliveryStatus:
    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    # Every attempt failed: dead-lettered with the last error.
    DEAD = "DEAD"
    # Not sent: the endpoint was disabled or deleted before the attempt.
    SKIPPED = "SKIPPED"


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "project_id"], ["projects.tenant_id", "projects.id"], ondelete="CASCADE"
        ),
        Index("ix_webhook_endpoints_project", "tenant_id", "project_id", "id"),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(40))
    url: Mapped[str] = mapped_column(String(2000))
    description: Mapped[str] = mapped_column(Text, default="")
    # Event types this endpoint receives; empty means every type.
    event_types: Mapped[list[str]] = mapped_column(JSONType, default=list)
    # The `whsec_` secret, encrypted (webhooks.signing.seal); never returned after creation.
    secret_sealed: Mapped[str] = mapped_column(Text)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled_reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("tenant_id", "endpoint_id", "event_id"),
        Index("ix_webhook_deliveries_endpoint", "tenant_id", "endpoint_id", "id"),
        # The deliveries of one event (a document's downstream state).
        Index("ix_webhook_deliveries_event", "tenant_id", "event_id"),
        # Every tenant's deliveries still pending, by age (the downstream pass's lag check).
        Index(
            "ix_webhook_deliveries_pending",
            "created_at",
            sqlite_where=text("status = 'PENDING'"),
            postgresql_where=text("status = 'PENDING'"),
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # No foreign key: the log outlives a deleted endpoint until retention sweeps it.
    endpoint_id: Mapped[str] = mapped_column(String(40))
    event_id: Mapped[str] = mapped_column(String(200))
    event_type: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default=DeliveryStatus.PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"
    __table_args__ = (
        UniqueConstraint("tenant_id", "delivery_id", "attempt"),
        ForeignKeyConstraint(
            ["tenant_id", "delivery_id"],
            ["webhook_deliveries.tenant_id", "webhook_deliveries.id"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(40))
    attempt: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    latency_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    next_retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
