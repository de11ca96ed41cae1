"""Projects: a tenant's unit of organisation, with denormalised batch and document counters."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, UTCDateTime
from docflow.kit.clock import utcnow


class Project(Base):
    __tablename__ = "projects"
    __table_args__ = (
        UniqueConstraint("tenant_id", "name"),
        # "the projects that have a retention", for the retention schedule (every tenant's).
        Index(
            "ix_projects_retention",
            "tenant_id",
            "id",
            sqlite_where=text("retention_days IS NOT NULL"),
            postgresql_where=text("retention_days IS NOT NULL"),
        ),
    )

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    batch_count: Mapped[int] = mapped_column(Integer, default=0)
    document_count: Mapped[int] = mapped_column(Integer, default=0)
    # Terminal batches older than this many days are deleted by the retention schedule;
    # None keeps them.
    retention_days: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
