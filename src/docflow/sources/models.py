"""Sources, their poll runs, and the files they took."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, UTCDateTime
from docflow.kit.clock import utcnow


class Source(Base):
    """A folder under the operator's sources root (inside the tenant's own directory)."""

    __tablename__ = "sources"
    __table_args__ = (
        Index("ix_sources_project", "tenant_id", "project_id", "id"),
        # "the sources due to be polled" (every tenant's, for the schedule's tick).
        Index("ix_sources_due", "next_poll_at"),
    )

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(40))
    workflow_id: Mapped[str] = mapped_column(String(40))
    # Relative to the tenant's directory under DOCFLOW_SOURCES_ROOT.
    path: Mapped[str] = mapped_column(String(1000))
    cron: Mapped[str] = mapped_column(String(120))
    move_after: Mapped[bool] = mapped_column(Boolean, default=False)
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    healthy: Mapped[bool] = mapped_column(Boolean, default=True)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    # None while paused: the tick only sees sources that have a next poll.
    next_poll_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_poll_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SourceRun(Base):
    """One poll of a source: what it saw and took, its batch, or why it could not look."""

    __tablename__ = "source_runs"
    __table_args__ = (Index("ix_source_runs_source", "tenant_id", "source_id", "started_at"),)

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # The poll workflow's id: a re-run of the poll finds its run.
    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    source_id: Mapped[str] = mapped_column(String(40))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    files_seen: Mapped[int] = mapped_column(Integer, default=0)
    files_taken: Mapped[int] = mapped_column(Integer, default=0)
    files_skipped: Mapped[int] = mapped_column(Integer, default=0)
    batch_id: Mapped[str | None] = mapped_column(String(40), default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)


class SourceFile(Base):
    """A file a source took: once per (source, path, content hash), whichever poll claims it."""

    __tablename__ = "source_files"
    __table_args__ = (Index("ix_source_files_run", "tenant_id", "run_id"),)

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    source_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    path: Mapped[str] = mapped_column(String(1000), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(120))
    document_id: Mapped[str | None] = mapped_column(String(40), default=None)
    # The file's size and change time (ns) when last keyed (a folder's file; a bucket's object
    # has no change time): a poll that finds them unchanged reuses `sha256` instead of reading
    # the file. None on files taken before they were recorded (keyed once more, then recorded).
    size: Mapped[int | None] = mapped_column(BigInteger, default=None)
    mtime_ns: Mapped[int | None] = mapped_column(BigInteger, default=None)
    # "processed" or "failed" once moved there (sources with move_after).
    moved_to: Mapped[str | None] = mapped_column(String(20), default=None)
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
