"""Use cases for tenants, users, memberships and API keys, and API-key authentication.

API keys look like `dfk_<prefix>_<secret>`: the prefix is public and unique (it finds the key),
only the SHA-256 of the secret is stored, and the whole key is shown once, at creation.

A verified key is remembered by the process for `VERIFIED_KEY_TTL_SECONDS` (keyed by the SHA-256
of the whole key, never the key itself), so a client's requests do not each look their key up:
a key revoked through this process stops working at once, one revoked elsewhere (another API
process, `docflow api-keys revoke`) within that many seconds. Authentication only reads; a key's
last use is recorded apart from the request that used it (`record_key_use`), at most once per
`TOUCH_INTERVAL`.

Members of a tenant have a role (`ROLE_SCOPES`): `viewer` may read, `reviewer` read and review,
`admin` everything ("*"). A key may belong to a member: it never holds scopes beyond their role
when created, and at authentication its scopes are narrowed to what the member's role grants
then (`effective_scopes`), so lowering a role narrows the member's keys at once (through this
process; through another within `VERIFIED_KEY_TTL_SECONDS`, like a revocation). A member who
leaves the tenant has their keys revoked, and a key whose user is no longer a member is refused.
A tenant with members keeps at least one admin (`LastAdmin`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from docflow.db import bind_tenant
from docflow.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthorized, get_one
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.tenancy import TenantContext, TenantId, from_credential, grants
from docflow.tenants.models import ApiKey, Membership, Tenant, User
from docflow.tenants.repository import (
    ApiKeyRepository,
    KeyRecord,
    MembershipRepository,
    TenantRowRepository,
    UserRecord,
    find_key_by_prefix,
    find_memberships_of_user,
    find_user,
)

log = structlog.get_logger(__name__)

KEY_SCHEME = "dfk"
PREFIX_LENGTH = 12
_PREFIX_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_PREFIX = re.compile(rf"^[{_PREFIX_ALPHABET}]{{{PREFIX_LENGTH}}}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PLAN = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_SCOPE = re.compile(r"^(\*|[a-z][a-z0-9_.-]*(:[a-z*][a-z0-9_*.-]*)?)$")
# A member's role -> the scopes a key of theirs may hold ("*": every scope).
ROLE_SCOPES: dict[str, tuple[str, ...]] = {
    "admin": ("*",),
    "reviewer": ("read", "review"),
    "viewer": ("read",),
}
ROLES = frozenset(ROLE_SCOPES)
ADMIN = "admin"
TOUCH_INTERVAL = timedelta(minutes=1)
# How long a verified key is trusted without reading it again: the revocation delay across
# processes.
VERIFIED_KEY_TTL_SECONDS = 5.0
_VERIFIED_KEYS_MAX = 10_000


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _name(value: str, what: str) -> str:
    value = value.strip()
    if not value or len(value) > 200:
        raise InvalidInput(f"{what} must be 1 to 200 characters", field="name")
    return value


def create_tenant(session: Session, *, name: str, plan: str = "free") -> Tenant:
    """A new tenant with its plan; `session` is bound to it from now on (on PostgreSQL a
    tenant's row is written and read under its own id)."""
    if not _PLAN.match(plan):
        raise InvalidInput("plan must be a short lowercase word", field="plan")
    tenant = Tenant(id=ids.new_id(ids.TENANT), name=_name(name, "tenant name"), plan=plan)
    bind_tenant(session, tenant.id)
    session.add(tenant)
    session.flush()
    log.info("tenant.created", tenant_id=tenant.id, plan=plan)
    return tenant


def _normalise_email(email: str) -> str:
    email = email.strip().lower()
    if len(email) > 320 or not _EMAIL.match(email):
        raise InvalidInput("not a valid email address", field="email")
    return email


def create_user(session: Session, *, email: str, name: str = "") -> User:
    """A new user; emails are unique, compared case-insensitively. Conflict if taken."""
    email = _normalise_email(email)
    if find_user(session, email=email) is not None:
        raise Conflict("a user with this email already exists", field="email")
    user = User(id=ids.new_id(ids.USER), email=email, name=name.strip()[:200])
    session.add(user)
    session.flush()
    log.info("user.created", user_id=user.id)
    return user


def find_user_by_email(session: Session, *, email: str) -> UserRecord:
    """The user with this email (case-insensitive), whatever their tenants; NotFound otherwise."""
    user = find_user(session, email=_normalise_email(email))
    if user is None:
        raise NotFound("no user with this email")
    return user


def get_tenant(session: Session, tenant_id: str) -> Tenant:
    """The tenant's own row (name, plan); NotFound when it is gone."""
    return get_one(TenantRowRepository(session, tenant_id).get(), "tenant")


class KeyExpired(Unauthorized):
    """The API key's expiry has passed: it is refused for good (create a new one)."""

    code = "api_key_expired"


class TenantSuspended(Forbidden):
    """The tenant is suspended: its API keys and its uploads are refused until it is resumed."""

    code = "tenant_suspended"


class AlreadyAMember(Conflict):
    """The user is a member of this tenant already."""

    code = "already_a_member"


class LastAdmin(Conflict):
    """The change would leave a tenant with members but no admin."""

    code = "last_admin"


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(sorted(ROLES))}", field="role")
    return role


def add_member(
    session: Session, tenant_id: str, *, user_id: str, role: str = "viewer"
) -> Membership:
    """Make a user a member of a tenant with a role; Conflict if already a member."""
    _check_role(role)
    get_tenant(session, tenant_id)
    get_one(find_user(session, user_id=user_id), "user")
    memberships = MembershipRepository(session, tenant_id)
    if memberships.get(user_id) is not None:
        raise AlreadyAMember("the user is already a member of this tenant", field="user_id")
    membership = Membership(tenant_id=tenant_id, user_id=user_id, role=role)
    session.add(membership)
    session.flush()
    log.info("membership.created", tenant_id=tenant_id, user_id=user_id, role=role)
    return membership


def invite_user(
    session: Session, tenant_id: str, *, email: str, role: str, name: str = ""
) -> Membership:
    """Make the user with this email a member of the tenant with `role`, adding them to the
    directory first when the email is new (with `name`; a known user keeps their name).
    AlreadyAMember (409) if they are a member already.

    A concurrent request adding the same email (here or to another tenant) makes this one's
    insert fail on a unique key once it commits: this one then reads again, and finds the user
    (or the member) the other added."""
    email = _normalise_email(email)
    _check_role(role)
    get_tenant(session, tenant_id)
    for attempt in range(2):
        found = find_user(session, email=email)
        if found is not None and MembershipRepository(session, tenant_id).get(found.id):
            raise AlreadyAMember("a user with this email is already a member", field="email")
        try:
            with session.begin_nested():
                user_id = found.id if found else create_user(session, email=email, name=name).id
                return add_member(session, tenant_id, user_id=user_id, role=role)
        except IntegrityError:
            if attempt:
                raise
            log.info("membership.create_raced", tenant_id=tenant_id)
    raise AssertionError("unreachable")


def list_members(
    session: Session, tenant_id: str, *, cursor: str | None = None, limit: int | None = None
) -> Page[Membership]:
    """A page of the tenant's members (with their user: `Membership.user`), by user id."""
    return MembershipRepository(session, tenant_id).page(cursor=cursor, limit=limit)


def get_member(session: Session, tenant_id: str, *, user_id: str) -> Membership:
    """The tenant's member with this user id; NotFound ("user not found") otherwise, another
    tenant's user included."""
    return get_one(MembershipRepository(session, tenant_id).get(user_id), "user")


def find_member_by_email(session: Session, tenant_id: str, *, email: str) -> Membership | None:
    """The tenant's member with this email (compared case-insensitively); None when no member
    has it, a user of another tenant included. InvalidInput naming `email` when it is not one."""
    return MembershipRepository(session, tenant_id).by_email(_normalise_email(email))


def get_member_by_email(session: Session, tenant_id: str, *, email: str) -> Membership:
    """As `find_member_by_email`, NotFound ("user not found") when no member has it."""
    return get_one(find_member_by_email(session, tenant_id, email=email), "user")


def _keep_an_admin(
    session: Session, tenant_id: str, member: Membership, *, field: str | None
) -> None:
    """LastAdmin when `member` is the tenant's only admin (the admins stay locked until the
    transaction ends, see `MembershipRepository.lock_admins`)."""
    if member.role != ADMIN:
        return
    admins = MembershipRepository(session, tenant_id).lock_admins()
    if not set(admins) - {member.user_id}:
        raise LastAdmin(
            "a tenant keeps at least one admin: make another member admin first", field=field
        )


class NotYourName(Forbidden):
    """A user's name is the directory's, shown in every tenant they belong to: only the user
    changes it (or the operator), never a tenant's admin for them."""

    code = "name_not_yours"


def update_member(
    session: Session,
    tenant_id: str,
    *,
    user_id: str,
    role: str | None = None,
    name: str | None = None,
    by_user: str | None = None,
) -> Membership:
    """Change a member's role in this tenant and/or their name (the directory's: shown in every
    tenant they belong to), the name only when the caller is that member (`by_user`):
    NotYourName (403, naming `name`) otherwise. A lower role narrows their keys at once (see
    the module docstring); LastAdmin when the tenant's only admin would lose the role."""
    member = get_member(session, tenant_id, user_id=user_id)
    if name is not None and by_user != user_id:
        raise NotYourName(
            "a user's name is theirs, shown in every tenant they belong to: only they change "
            "it (the console's tenant page), or the operator (`docflow users rename`)",
            field="name",
        )
    if role is not None and role != member.role:
        _check_role(role)
        if role != ADMIN:
            _keep_an_admin(session, tenant_id, member, field="role")
        before, member.role = member.role, role
        log.info(
            "membership.role_changed", tenant_id=tenant_id, user_id=user_id, role=role, was=before
        )
    if name is not None:
        member.user.name = name.strip()[:200]
    session.flush()
    forget_when_committed(session, lambda: verified_keys.forget_user(tenant_id, user_id))
    return member


def rename_user(session: Session, tenant_id: str, *, user_id: str, name: str) -> Membership:
    """Set a member's name in the directory (for every tenant they belong to): the user's own
    change, or the operator's. NotFound ("user not found") when they are no member of
    `tenant_id` (through which the row is reached, as row-level security has it)."""
    member = get_member(session, tenant_id, user_id=user_id)
    member.user.name = name.strip()[:200]
    session.flush()
    log.info("user.renamed", tenant_id=tenant_id, user_id=user_id)
    return member


def rename_self(session: Session, *, user_id: str, name: str) -> None:
    """A user sets their own name (reached through one of their memberships, which binds
    `session` to that tenant); NotFound ("user not found") when they belong to no tenant."""
    tenants = find_memberships_of_user(session, user_id)
    if not tenants:
        raise NotFound("user not found")
    bind_tenant(session, tenants[0][0])
    rename_user(session, tenants[0][0], user_id=user_id, name=name)


def remove_member(session: Session, tenant_id: str, *, user_id: str) -> list[str]:
    """Remove a member from the tenant and revoke their keys there (they stop working at once
    through this process); the ids of the keys revoked. The user stays in the directory.
    LastAdmin when they are the tenant's only admin."""
    member = get_member(session, tenant_id, user_id=user_id)
    _keep_an_admin(session, tenant_id, member, field=None)
    now = utcnow()
    revoked = []
    for key in ApiKeyRepository(session, tenant_id).active_of_user(user_id):
        key.revoked_at = now
        revoked.append(key.id)
    session.delete(member)
    session.flush()
    forget_when_committed(session, lambda: verified_keys.forget_user(tenant_id, user_id))
    log.info("membership.removed", tenant_id=tenant_id, user_id=user_id, keys_revoked=len(revoked))
    return revoked


def effective_scopes(key_scopes: tuple[str, ...], role: str | None) -> tuple[str, ...]:
    """What a key may do: its own scopes, narrowed to its user's role when it has one (`role`
    None: a key of the tenant itself keeps its scopes). A scope survives when the role grants it,
    and a role's scope when the key grants it ("write" implies "review", "*" everything)."""
    if role is None:
        return key_scopes
    allowed = ROLE_SCOPES.get(role, ())
    kept = {s for s in key_scopes if grants(allowed, s)} | {
        s for s in allowed if grants(key_scopes, s)
    }
    return tuple(sorted(kept))


def scopes_within_role(
    session: Session, tenant_id: str, *, user_id: str, scopes: list[str]
) -> list[str]:
    """`scopes` narrowed to what the member's role grants (the default scopes of a key created
    for them); NotFound naming `user_id` when they are not a member."""
    member = get_one(MembershipRepository(session, tenant_id).get(user_id), "user", field="user_id")
    return list(effective_scopes(tuple(sorted(set(scopes))), member.role))


def list_user_tenants(session: Session, *, user_id: str) -> list[tuple[str, str]]:
    """(tenant id, role) of every tenant the user is a member of, by tenant id; this crosses
    tenants by design (a user chooses a tenant after signing in)."""
    return find_memberships_of_user(session, user_id)


def _check_scopes(scopes: list[str]) -> list[str]:
    if not scopes:
        raise InvalidInput("an API key needs at least one scope", field="scopes")
    bad = [s for s in scopes if not isinstance(s, str) or not _SCOPE.match(s)]
    if bad:
        raise InvalidInput(f"invalid scopes: {', '.join(map(str, bad))}", field="scopes")
    return sorted(set(scopes))


def create_api_key(
    session: Session,
    tenant_id: str,
    *,
    name: str,
    scopes: list[str],
    user_id: str | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """A new API key for the tenant and its plaintext `dfk_<prefix>_<secret>` (shown once).

    With `user_id` the key belongs to that member (NotFound naming `user_id` otherwise) and may
    hold only scopes their role grants (InvalidInput naming `scopes` otherwise). With
    `expires_at` (in the future: InvalidInput naming it otherwise) it stops working then."""
    get_tenant(session, tenant_id)
    if expires_at is not None and expires_at <= utcnow():
        raise InvalidInput("an expiry must be in the future", field="expires_at")
    checked = _check_scopes(scopes)
    repo = ApiKeyRepository(session, tenant_id)
    if user_id is not None:
        member = get_one(
            MembershipRepository(session, tenant_id).get(user_id), "user", field="user_id"
        )
        allowed = ROLE_SCOPES.get(member.role, ())
        beyond = [s for s in checked if not grants(allowed, s)]
        if beyond:
            raise InvalidInput(
                f"a key of a {member.role} may hold only {', '.join(allowed)}; "
                f"not {', '.join(beyond)}",
                field="scopes",
            )
    prefix = "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))
    secret = secrets.token_urlsafe(32)
    key = ApiKey(
        tenant_id=repo.tenant_id,
        id=ids.new_id(ids.API_KEY),
        name=_name(name, "key name"),
        prefix=prefix,
        key_hash=_hash_secret(secret),
        scopes=checked,
        user_id=user_id,
        expires_at=expires_at,
    )
    session.add(key)
    session.flush()
    log.info("api_key.created", tenant_id=tenant_id, key_id=key.id, user_id=user_id)
    return key, f"{KEY_SCHEME}_{prefix}_{secret}"


def list_api_keys(session: Session, tenant_id: str) -> list[ApiKey]:
    """The tenant's API keys, revoked ones included, oldest first."""
    return ApiKeyRepository(session, tenant_id).list()


def revoke_api_key(session: Session, tenant_id: str, *, key_id: str) -> ApiKey:
    """Revoke a key (idempotent: revoking twice keeps the first time). NotFound if not the
    tenant's."""
    key = get_one(ApiKeyRepository(session, tenant_id).get(key_id), "API key")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        session.flush()
        log.info("api_key.revoked", tenant_id=tenant_id, key_id=key_id)
    forget_when_committed(session, lambda: verified_keys.forget(key_id))
    return key


_DUMMY_HASH = _hash_secret("not a key")


class _VerifiedKeys:
    """Keys this process verified lately: SHA-256 of the whole key -> (verified at, record)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, KeyRecord]] = {}

    def get(self, digest: str, now: float) -> KeyRecord | None:
        entry = self._entries.get(digest)
        if entry is None or now - entry[0] >= VERIFIED_KEY_TTL_SECONDS:
            return None
        return entry[1]

    def put(self, digest: str, record: KeyRecord, now: float) -> None:
        with self._lock:
            if len(self._entries) >= _VERIFIED_KEYS_MAX:
                self._entries.clear()
            self._entries[digest] = (now, record)

    def touched(self, digest: str, when: datetime) -> None:
        with self._lock:
            entry = self._entries.get(digest)
            if entry is not None:
                self._entries[digest] = (entry[0], dataclasses.replace(entry[1], last_used_at=when))

    def forget(self, key_id: str) -> None:
        with self._lock:
            for digest in [d for d, (_, r) in self._entries.items() if r.key_id == key_id]:
                del self._entries[digest]

    def forget_tenant(self, tenant_id: str) -> None:
        """Forget every key of a tenant whose status changed."""
        with self._lock:
            for digest in [d for d, (_, r) in self._entries.items() if r.tenant_id == tenant_id]:
                del self._entries[digest]

    def forget_user(self, tenant_id: str, user_id: str) -> None:
        """Forget the keys of a member whose role or membership changed."""
        with self._lock:
            for digest in [
                d
                for d, (_, r) in self._entries.items()
                if r.user_id == user_id and r.tenant_id == tenant_id
            ]:
                del self._entries[digest]


verified_keys = _VerifiedKeys()


def forget_when_committed(session: Session, forget: Callable[[], None]) -> None:
    """Forget verified keys now and again once `session` commits: a request of this process
    that verifies the key in between still reads the old row (the change is not committed)."""
    forget()
    event.listen(session, "after_commit", lambda _session: forget(), once=True)


@dataclass(frozen=True)
class KeyUse:
    """A verified key's use, due to be recorded as its `last_used_at` (`record_key_use`)."""

    tenant_id: TenantId
    key_id: str
    at: datetime


@dataclass(frozen=True)
class Authenticated:
    """A verified API key: the caller's tenant context, and the key's use when it is due to be
    recorded (at most once per `TOUCH_INTERVAL`), else None."""

    tenant: TenantContext
    use: KeyUse | None


def authenticate(session: Session, *, token: str) -> Authenticated:
    """The tenant context of a bearer API key; Unauthorized when malformed, unknown or revoked,
    `TenantSuspended` (403) while its tenant is suspended (`docflow.tenants.status`).

    Reads only (and nothing when the key was verified in the last `VERIFIED_KEY_TTL_SECONDS`,
    see the module docstring): recording the key's use is the caller's to do, outside the
    request's transaction, with `record_key_use`. A use handed out counts as recorded for this
    process, so concurrent requests hand out one.
    """
    token = token.strip()
    digest = _hash_secret(token)
    clock = time.monotonic()
    record = verified_keys.get(digest, clock)
    if record is None:
        record = _verify(session, token)
        verified_keys.put(digest, record, clock)
    now = utcnow()
    if record.expires_at is not None and record.expires_at <= now:  # cached ones too
        raise KeyExpired(f"API key expired at {record.expires_at.isoformat()}")
    tenant_id = from_credential(record.tenant_id)
    tenant = TenantContext(
        tenant_id=tenant_id,
        key_id=record.key_id,
        scopes=effective_scopes(record.scopes, record.role if record.user_id else None),
        user_id=record.user_id,
    )
    if record.last_used_at is not None and now - record.last_used_at < TOUCH_INTERVAL:
        return Authenticated(tenant, None)
    verified_keys.touched(digest, now)
    return Authenticated(tenant, KeyUse(tenant_id=tenant_id, key_id=record.key_id, at=now))


def record_key_use(session: Session, use: KeyUse) -> None:
    """Record `use` as its key's `last_used_at` (a key deleted since is left alone)."""
    ApiKeyRepository(session, use.tenant_id).touch(use.key_id, use.at)


def _verify(session: Session, token: str) -> KeyRecord:
    scheme, _, rest = token.partition("_")
    prefix, _, secret = rest.partition("_")
    if scheme != KEY_SCHEME or not _PREFIX.match(prefix) or not secret:
        raise Unauthorized("malformed API key")
    record = find_key_by_prefix(session, prefix)
    # Compare even when the prefix is unknown, so timing does not tell the two apart.
    expected = record.key_hash if record is not None else _DUMMY_HASH
    if not hmac.compare_digest(expected, _hash_secret(secret)) or record is None:
        raise Unauthorized("invalid API key")
    if record.revoked:
        raise Unauthorized("API key revoked")
    if record.user_id is not None and record.role is None:
        raise Unauthorized("the API key's user is no longer a member of its tenant")
    if record.suspended:
        raise TenantSuspended("the tenant is suspended: its API keys are refused")
    return record
