"""Queries for tenants, users, memberships and API keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, delete, func, select, text, update
from sqlalchemy.orm import Session

from docflow.db import is_postgres
from docflow.kit.clock import as_utc
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.tenancy import TenantRepository, cross_tenant
from docflow.tenants.models import (
    TENANT_SUSPENDED,
    ApiKey,
    Invitation,
    Membership,
    SignInThrottle,
    Tenant,
    User,
)


class TenantRowRepository(TenantRepository):
    """The tenant's own row of the directory (its id is the tenant; on PostgreSQL no other
    tenant's row is visible)."""

    def get(self) -> Tenant | None:
        return self.session.get(Tenant, self.tenant_id)

    def lock(self) -> Tenant | None:
        """The tenant's row, locked until the transaction ends (PostgreSQL), read afresh."""
        stmt = (
            select(Tenant)
            .where(Tenant.id == self.tenant_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def active_key_count(self) -> int:
        """How many of the tenant's API keys are not revoked."""
        stmt = self.base(ApiKey).where(ApiKey.revoked_at.is_(None)).with_only_columns(func.count())
        return int(self.session.scalar(stmt) or 0)


@dataclass(frozen=True)
class UserRecord:
    """A user of the directory, found before they belong to the caller's tenant."""

    id: str
    email: str
    name: str
    # Signed into the user's console sessions (`docflow.web.sessions`).
    session_epoch: int = 0


@cross_tenant("a user signs in, or is added to a tenant, before belonging to it")
def find_user(
    session: Session, *, email: str | None = None, user_id: str | None = None
) -> UserRecord | None:
    """The user with this email or id, whatever their tenants (SECURITY DEFINER on
    PostgreSQL, where the application role sees only its tenant's members)."""
    if is_postgres(session):
        row = session.execute(
            text("SELECT id, email, name, session_epoch FROM docflow_user_lookup(:email, :id)"),
            {"email": email, "id": user_id},
        ).first()
    else:
        condition = User.email == email if email is not None else User.id == user_id
        row = session.execute(
            select(User.id, User.email, User.name, User.session_epoch).where(condition)
        ).first()
    if row is None:
        return None
    return UserRecord(row.id, row.email, row.name, int(row.session_epoch))


@cross_tenant("a user signs in before choosing one of their tenants")
def find_sign_in(session: Session, *, email: str) -> tuple[str, str | None] | None:
    """(user id, password hash) of the user with this email, whatever their tenants (SECURITY
    DEFINER on PostgreSQL); None when no user has it."""
    if is_postgres(session):
        row = session.execute(
            text("SELECT id, password_hash FROM docflow_user_sign_in(:email)"), {"email": email}
        ).first()
    else:
        row = session.execute(
            select(User.id, User.password_hash).where(User.email == email)
        ).first()
    return None if row is None else (row.id, row.password_hash)


@dataclass(frozen=True, slots=True)
class OidcCandidate:
    """A user an OpenID Connect sign-in may be: their id and the identity bound to them."""

    user_id: str
    issuer: str | None
    subject: str | None


@cross_tenant("a user signs in through OpenID Connect before choosing one of their tenants")
def find_oidc_candidates(
    session: Session, *, issuer: str, subject: str, email: str
) -> list[OidcCandidate]:
    """The user bound to (`issuer`, `subject`) and the user with `email` (one row when they are
    the same, none when neither exists), whatever their tenants (SECURITY DEFINER on
    PostgreSQL)."""
    if is_postgres(session):
        rows = session.execute(
            text(
                "SELECT id, oidc_issuer, oidc_subject "
                "FROM docflow_user_oidc(:issuer, :subject, :email)"
            ),
            {"issuer": issuer, "subject": subject, "email": email},
        )
    else:
        rows = session.execute(
            select(User.id, User.oidc_issuer, User.oidc_subject)
            .where(
                ((User.oidc_issuer == issuer) & (User.oidc_subject == subject))
                | (User.email == email)
            )
            .limit(2)
        )
    return [OidcCandidate(row.id, row.oidc_issuer, row.oidc_subject) for row in rows]


def bind_oidc_subject(
    session: Session, tenant_id: str, *, user_id: str, issuer: str, subject: str
) -> bool:
    """Bind a member of `tenant_id` to an issuer's subject (replacing a binding to another
    issuer); False when they are no member or are bound to this issuer already (reached
    through the membership, as row-level security has it)."""
    member = MembershipRepository(session, tenant_id).get(user_id)
    if member is None or (member.user.oidc_issuer == issuer and member.user.oidc_subject):
        return False
    member.user.oidc_issuer = issuer
    member.user.oidc_subject = subject
    return True


def set_password_hash(session: Session, tenant_id: str, *, user_id: str, value: str) -> bool:
    """Store a member's password hash; False when `user_id` is no member of `tenant_id` (the
    directory row is reached through the membership, as row-level security has it)."""
    member = MembershipRepository(session, tenant_id).get(user_id)
    if member is None:
        return False
    member.user.password_hash = value
    member.user.session_epoch = User.session_epoch + 1
    return True


BY_USER_ID = (SortKey(Membership.user_id),)


class MembershipRepository(TenantRepository):
    """The tenant's members, each read with their directory entry (`Membership.user`)."""

    def get(self, user_id: str) -> Membership | None:
        stmt = self.base(Membership).where(Membership.user_id == user_id)
        return self.session.scalars(stmt).first()

    def by_email(self, email: str) -> Membership | None:
        """The member with this (normalised) email: the directory's unique email index, then
        the membership's key."""
        stmt = (
            self.base(Membership)
            .join(User, User.id == Membership.user_id)
            .where(User.email == email)
        )
        return self.session.scalars(stmt).first()

    def page(self, *, cursor: str | None, limit: int | None) -> Page[Membership]:
        return keyset_page(
            self.session, self.base(Membership), order=BY_USER_ID, cursor=cursor, limit=limit
        )

    def lock_admins(self) -> list[str]:
        """The ids of the tenant's admins, their memberships locked until the transaction ends
        (PostgreSQL; SQLite's write transactions are serial already), so two requests cannot
        each demote or remove one of the last two admins."""
        stmt = (
            self.base(Membership)
            .where(Membership.role == "admin")
            .with_only_columns(Membership.user_id)
            .with_for_update()
        )
        return list(self.session.scalars(stmt))


class ApiKeyRepository(TenantRepository):
    def list(self) -> list[ApiKey]:
        return list(self.session.scalars(self.base(ApiKey).order_by(ApiKey.id)))

    def get(self, key_id: str) -> ApiKey | None:
        return self.session.scalars(self.base(ApiKey).where(ApiKey.id == key_id)).first()

    def active_of_user(self, user_id: str) -> Sequence[ApiKey]:
        """The user's keys in this tenant that are not revoked."""
        stmt = self.base(ApiKey).where(ApiKey.user_id == user_id, ApiKey.revoked_at.is_(None))
        return self.session.scalars(stmt.order_by(ApiKey.id)).all()

    def touch(self, key_id: str, when: datetime) -> None:
        stmt = (
            self.scoped_update(ApiKey)
            .where(ApiKey.id == key_id)
            .values(last_used_at=when)
            .execution_options(synchronize_session=False)
        )
        self.session.execute(stmt)


@dataclass(frozen=True)
class KeyRecord:
    """What authentication needs to know about a key, read before the tenant is known."""

    tenant_id: str
    key_id: str
    key_hash: str
    scopes: tuple[str, ...]
    revoked: bool
    last_used_at: datetime | None
    # The key's user, and their role in the key's tenant (None once they are no longer a
    # member); both None for a key of the tenant itself.
    user_id: str | None = None
    role: str | None = None
    # The key's tenant is suspended: its keys are refused.
    suspended: bool = False
    # When the key stops working (None: never).
    expires_at: datetime | None = None


@cross_tenant("API-key authentication happens before the tenant is known")
def find_key_by_prefix(session: Session, prefix: str) -> KeyRecord | None:
    """The key with this public prefix, whatever its tenant, with its user's role in that
    tenant (SECURITY DEFINER on PostgreSQL)."""
    if is_postgres(session):
        row = session.execute(
            text(
                "SELECT tenant_id, key_id AS id, key_hash, scopes, revoked, last_used_at, "
                "user_id, role, tenant_status, expires_at FROM docflow_api_key_lookup(:prefix)"
            ),
            {"prefix": prefix},
        ).first()
    else:
        # Columns, not the entity: a key already in the session must not answer with stale
        # values.
        row = session.execute(
            select(
                ApiKey.tenant_id,
                ApiKey.id,
                ApiKey.key_hash,
                ApiKey.scopes,
                ApiKey.revoked_at.is_not(None).label("revoked"),
                ApiKey.last_used_at,
                ApiKey.user_id,
                Membership.role,
                Tenant.status.label("tenant_status"),
                ApiKey.expires_at,
            )
            .join(Tenant, Tenant.id == ApiKey.tenant_id)
            .outerjoin(
                Membership,
                and_(
                    Membership.tenant_id == ApiKey.tenant_id, Membership.user_id == ApiKey.user_id
                ),
            )
            .where(ApiKey.prefix == prefix)
        ).first()
    if row is None:
        return None
    return KeyRecord(
        tenant_id=row.tenant_id,
        key_id=row.id,
        key_hash=row.key_hash,
        scopes=tuple(row.scopes),
        revoked=bool(row.revoked),
        last_used_at=row.last_used_at,
        user_id=row.user_id,
        role=row.role,
        suspended=row.tenant_status == TENANT_SUSPENDED,
        expires_at=as_utc(row.expires_at) if row.expires_at is not None else None,
    )


@cross_tenant("a user signs in before choosing one of their tenants")
def find_memberships_of_user(session: Session, user_id: str) -> list[tuple[str, str]]:
    """(tenant id, role) of every tenant the user belongs to (SECURITY DEFINER on PostgreSQL)."""
    if is_postgres(session):
        rows = session.execute(
            text("SELECT tenant_id, role FROM docflow_user_memberships(:user_id)"),
            {"user_id": user_id},
        )
    else:
        rows = session.execute(
            select(Membership.tenant_id, Membership.role)
            .where(Membership.user_id == user_id)
            .order_by(Membership.tenant_id)
        )
    return [(row.tenant_id, row.role) for row in rows]


@cross_tenant("a user's tenants are listed before they choose one")
def find_tenants_of_user(session: Session, user_id: str) -> list[tuple[str, str, str]]:
    """(tenant id, tenant name, role) of every tenant the user belongs to, by tenant id
    (SECURITY DEFINER on PostgreSQL)."""
    if is_postgres(session):
        rows = session.execute(
            text("SELECT tenant_id, name, role FROM docflow_user_tenants(:user_id)"),
            {"user_id": user_id},
        )
    else:
        rows = session.execute(
            select(Membership.tenant_id, Tenant.name, Membership.role)
            .join(Tenant, Tenant.id == Membership.tenant_id)
            .where(Membership.user_id == user_id)
            .order_by(Membership.tenant_id)
        )
    return [(row.tenant_id, row.name, row.role) for row in rows]


@cross_tenant("a user signs out before, or without, choosing a tenant")
def end_user_sessions(session: Session, user_id: str) -> None:
    """Add one to the user's session epoch: every console session signed before is refused
    (SECURITY DEFINER on PostgreSQL)."""
    if is_postgres(session):
        session.execute(text("SELECT docflow_user_end_sessions(:user_id)"), {"user_id": user_id})
    else:
        session.execute(
            update(User)
            .where(User.id == user_id)
            .values(session_epoch=User.session_epoch + 1)
            .execution_options(synchronize_session=False)
        )


# --- sign-in throttles: not tenant data (sign-in comes before any tenant) -----------------------


def read_throttles(session: Session, keys: Sequence[str]) -> list[SignInThrottle]:
    """The throttle rows of `keys` that exist, read afresh."""
    stmt = (
        select(SignInThrottle)
        .where(SignInThrottle.key.in_(keys))
        .execution_options(populate_existing=True)
    )
    return list(session.scalars(stmt))


def lock_throttles(session: Session, keys: Sequence[str]) -> dict[str, SignInThrottle]:
    """The throttle rows of `keys` that exist, locked until the transaction ends (PostgreSQL;
    SQLite's write transactions are serial already), in key order so two sign-ins cannot
    deadlock."""
    stmt = (
        select(SignInThrottle)
        .where(SignInThrottle.key.in_(keys))
        .order_by(SignInThrottle.key)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return {row.key: row for row in session.scalars(stmt)}


def delete_throttles(session: Session, keys: Sequence[str]) -> None:
    session.execute(
        delete(SignInThrottle)
        .where(SignInThrottle.key.in_(keys))
        .execution_options(synchronize_session=False)
    )


# --- invitations --------------------------------------------------------------------------------


class InvitationRepository(TenantRepository):
    """The tenant's pending invitations of existing users."""

    def list(self) -> list[Invitation]:
        return list(self.session.scalars(self.base(Invitation).order_by(Invitation.id)))

    def get(self, invitation_id: str) -> Invitation | None:
        stmt = self.base(Invitation).where(Invitation.id == invitation_id)
        return self.session.scalars(stmt).first()

    def of_user(self, user_id: str) -> Invitation | None:
        stmt = self.base(Invitation).where(Invitation.user_id == user_id)
        return self.session.scalars(stmt).first()


@dataclass(frozen=True, slots=True)
class PendingInvitation:
    """An invitation as the invited user sees it: which tenant (its name), which role."""

    tenant_id: str
    id: str
    tenant_name: str
    role: str
    created_at: datetime


@cross_tenant("a user sees the invitations of tenants they do not belong to yet")
def find_invitations_of_user(session: Session, user_id: str) -> list[PendingInvitation]:
    """The user's pending invitations, with the inviting tenant's name (SECURITY DEFINER on
    PostgreSQL)."""
    if is_postgres(session):
        rows = session.execute(
            text(
                "SELECT tenant_id, id, tenant_name, role, created_at "
                "FROM docflow_user_invitations(:user_id)"
            ),
            {"user_id": user_id},
        )
    else:
        rows = session.execute(
            select(
                Invitation.tenant_id,
                Invitation.id,
                Tenant.name.label("tenant_name"),
                Invitation.role,
                Invitation.created_at,
            )
            .join(Tenant, Tenant.id == Invitation.tenant_id)
            .where(Invitation.user_id == user_id)
            .order_by(Invitation.tenant_id, Invitation.id)
        )
    return [
        PendingInvitation(r.tenant_id, r.id, r.tenant_name, r.role, as_utc(r.created_at))
        for r in rows
    ]
