"""Stored first answers of creating requests, keyed by the client's Idempotency-Key."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, JSONType, UTCDateTime
from docflow.kit.clock import utcnow


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # Hash of what makes two requests "the same" (method, path, body), computed by the caller.
    request_fingerprint: Mapped[str] = mapped_column(String(128))
    status_code: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[Any] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
