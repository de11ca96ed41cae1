"""What quotas keep: a tenant's consumption per calendar month (UTC), and each API key's
rate-limit state (on PostgreSQL, so every API process shares it)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base


class TenantUsage(Base):
    """Documents declared in batches and pages read, in one month (`YYYY-MM`)."""

    __tablename__ = "tenant_usage"

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    documents: Mapped[int] = mapped_column(BigInteger, default=0)
    pages: Mapped[int] = mapped_column(BigInteger, default=0)


class RateLimit(Base):
    """An API key's generic cell rate: the theoretical arrival time of its next request
    (seconds since the epoch). A key may send when that time is at most the burst's
    tolerance ahead of now."""

    __tablename__ = "rate_limits"

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    key_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tat: Mapped[float] = mapped_column(Float)
