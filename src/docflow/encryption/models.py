"""A tenant's data keys: each version wrapped by a key-encryption key, never stored in clear."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, text
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, UTCDateTime
from docflow.kit.clock import utcnow

ACTIVE = "active"
RETIRED = "retired"


class DataKeyRow(Base):
    """One version of a tenant's data key. The active version seals new writes; a retired one
    still opens the files sealed under it (a file's header names its version)."""

    __tablename__ = "data_keys"
    __table_args__ = (
        # At most one active version per tenant: of two workers creating the first key at
        # once, or two rotations, one commits and the other meets this index (or the key).
        Index(
            "uq_data_keys_active",
            "tenant_id",
            unique=True,
            sqlite_where=text("state = 'active'"),
            postgresql_where=text("state = 'active'"),
        ),
    )

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    wrapped_key: Mapped[bytes] = mapped_column(LargeBinary)
    # Which KEK wrapped it (`file:<fingerprint>` or `kms:<key id>`), so the right one unwraps.
    kek_id: Mapped[str] = mapped_column(String(300))
    state: Mapped[str] = mapped_column(String(10), default=ACTIVE)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    rewrapped_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
