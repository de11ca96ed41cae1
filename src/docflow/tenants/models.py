"""Tenants, users, memberships and API keys.

`tenants` and `users` are the global directory (no tenant column); memberships and API keys are
tenant data, keyed by tenant first.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from docflow.db import Base, JSONType, UTCDateTime
from docflow.kit.clock import utcnow

TENANT_ACTIVE = "active"
TENANT_SUSPENDED = "suspended"


class Tenant(Base):
    """A tenant of the directory. A `suspended` tenant's API keys are refused (403
    `tenant_suspended`) and its uploads too; who suspended it, when and why stay on the row
    until it is resumed (`tenants.service.suspend_tenant`)."""

    __tablename__ = "tenants"
    __table_args__ = (
        CheckConstraint(f"status IN ('{TENANT_ACTIVE}', '{TENANT_SUSPENDED}')", name="status"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    plan: Mapped[str] = mapped_column(String(32), default="free")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    status: Mapped[str] = mapped_column(
        String(16), default=TENANT_ACTIVE, server_default=TENANT_ACTIVE
    )
    suspended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    suspended_by: Mapped[str | None] = mapped_column(String(200), default=None)
    suspend_reason: Mapped[str | None] = mapped_column(String(500), default=None)


class User(Base):
    __tablename__ = "users"
    __table_args__ = (Index("ux_users_oidc", "oidc_issuer", "oidc_subject", unique=True),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # Stored lowercased by the service; the unique index serves "find a user by email".
    email: Mapped[str] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The console password's argon2id hash (`tenants.passwords`); None: no password sign-in.
    password_hash: Mapped[str | None] = mapped_column(String(200), default=None)
    # The OpenID Connect identity (`iss`, `sub`) bound at the user's first sign-in through it
    # (`docflow.web.oidc`); None until then.
    oidc_issuer: Mapped[str | None] = mapped_column(String(500), default=None)
    oidc_subject: Mapped[str | None] = mapped_column(String(255), default=None)
    # Signed into every console session: signing out, a new password and a released binding
    # add one, so the cookies signed before are refused (`docflow.web.sessions`).
    session_epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


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
    # After this moment the key answers 401 `api_key_expired`; None: it never expires.
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The member the key belongs to (its actions are theirs; its scopes never exceed their
    # role's); None for a key of the tenant itself.
    user_id: Mapped[str | None] = mapped_column(
        String(40), ForeignKey("users.id", ondelete="CASCADE"), default=None
    )


class Invitation(Base):
    """An existing user invited to a tenant by one of its admins: no membership until the user
    accepts it in the console (`tenants.invitations`). It names the user by the email the admin
    typed, so the tenant learns nothing else of them (name, other tenants)."""

    __tablename__ = "invitations"
    __table_args__ = (
        UniqueConstraint("tenant_id", "user_id", name="uq_invitations_tenant_id_user_id"),
        Index("ix_invitations_user_id", "user_id"),
    )

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(40), ForeignKey("users.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(32))
    invited_by: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SignInThrottle(Base):
    """Failed password sign-ins of one key (an account, a client address, or both: hashed),
    counted in a window, and until when the key is locked (`tenants.throttle`). Not tenant
    data: sign-in comes before any tenant."""

    __tablename__ = "sign_in_throttles"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    window_started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # How many times the key was locked since its last success: the next lock lasts twice as
    # long, up to a cap.
    locks: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
