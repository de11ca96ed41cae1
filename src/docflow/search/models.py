"""The search projection: one entry per document, keyed by the document's id (deterministic),
holding the document `version` it was built from so a stale or repeated event never overwrites
a newer entry.

The full-text index beside it is engine-specific and unmapped: on SQLite the FTS5 table
`search_fts` (its rowid is the entry's rowid), on PostgreSQL the generated column
`body_vector` (stored, `to_tsvector('simple', body)`) and the GIN index `ix_search_entries_body`
on it. `UNMAPPED` names what the migrations create outside the models, for the schema
comparison.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, JSONType, UTCDateTime
from docflow.kit.clock import utcnow

FTS_TABLE = "search_fts"
GIN_INDEX = "ix_search_entries_body"
# PostgreSQL only: the stored tsvector of `body` (0022), which the GIN index covers.
VECTOR_COLUMN = "body_vector"
TS_CONFIG = "simple"
# FTS5 keeps its index in shadow tables named after the virtual table.
UNMAPPED = frozenset(
    {FTS_TABLE, GIN_INDEX, VECTOR_COLUMN}
    | {f"{FTS_TABLE}_{shadow}" for shadow in ("data", "idx", "content", "docsize", "config")}
)


class SearchEntry(Base):
    __tablename__ = "search_entries"
    __table_args__ = (
        # A project's entries, newest document first (the search's filter and order).
        Index("ix_search_entries_project", "tenant_id", "project_id", "document_id"),
        Index("ix_search_entries_batch", "tenant_id", "batch_id"),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str | None] = mapped_column(String(40), default=None)
    batch_id: Mapped[str] = mapped_column(String(40))
    workflow_id: Mapped[str | None] = mapped_column(String(40), default=None)
    name: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(32))
    confidence: Mapped[float | None] = mapped_column(Float, default=None)
    # The document's version the entry was built from (`documents.version`).
    version: Mapped[int] = mapped_column(Integer)
    # Field name -> normalised value (null when not found); line items are in `body` only.
    fields: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # The values that read as numbers (as JSON numbers) and as ISO dates, by field name: what
    # range conditions compare, so a comparison never meets a value of another kind.
    numbers: Mapped[dict[str, Any]] = mapped_column(JSONType)
    dates: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # What the full-text index reads: the name, field names and values, table cells, the text.
    body: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
