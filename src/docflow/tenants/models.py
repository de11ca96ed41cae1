"""Tenants, users, memberships and API keys.

`tenants` and `users` are the global directory (no tenant column); memberships and API keys are
tenant data, keyed by tenant first.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from docflow.db import Base, JSONType, UTCDateTime
from docflow.kit.clock import utcnow


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    plan: Mapped[str] = mapped_column(String(32), default="free")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # Stored lowercased by the service; the unique index serves "find a user by email".
    email: Mapped[str] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The console password's argon2id hash (`tenants.passwords`); None: no password sign-in.
    password_hash: Mapped[str | None] = mapped_column(String(200), default=None)


class Membership(Base):
    __tablename__ = "memberships"
    __table_args__ = (Index("ix_memberships_user_id", "user_id"),)

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    # admin, reviewer or viewer (`tenants.service.ROLES`).
    role: Mapped[str] = mapped_column(String(32), default="viewer")
    # The member's directory entry, read with the membership (visible through it on PostgreSQL).
    user: Mapped[User] = relationship(lazy="joined", innerjoin=True)


class ApiKey(Base):
    """An API key: only the public prefix and the SHA-256 of the secret are stored."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_user_id", "tenant_id", "user_id", "id"),)

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[list[str]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The member the key belongs to (its actions are theirs; its scopes never exceed their
    # role's); None for a key of the tenant itself.
    user_id: Mapped[str | None] = mapped_column(
        String(40), ForeignKey("users.id", ondelete="CASCADE"), default=None
    )
