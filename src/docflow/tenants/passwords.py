"""Console passwords: setting a member's, and signing in with one.

Passwords are hashed with argon2id at OWASP's recommended minimum (19 MiB, two passes, one
lane): a sign-in costs tens of milliseconds and 19 MiB, so sign-ins arriving together cannot
take a process's memory (argon2-cffi's default, 64 MiB each, could). The encoded hash carries its
own parameters and salt, so stronger ones later apply to new passwords and old hashes still
verify. Signing in answers the same `Unauthorized` for an unknown
email, a user without a password and a wrong password, and spends an argon2 verification in
every case, so neither the answer nor its timing tells which.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy.orm import Session

from docflow.errors import InvalidInput, NotFound, Unauthorized
from docflow.tenants import throttle
from docflow.tenants.repository import (
    end_user_sessions,
    find_sign_in,
    find_tenants_of_user,
    find_user,
    set_password_hash,
)
from docflow.tenants.service import _normalise_email

log = structlog.get_logger(__name__)

MIN_LENGTH = 8
# argon2 reads the whole password: a bound keeps one sign-in's cost fixed.
MAX_LENGTH = 256
_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
_DUMMY = _hasher.hash("not the password of anyone")


def check_password(password: str) -> str:
    """`password` if it may be set; InvalidInput naming `password` otherwise."""
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise InvalidInput(
            f"a password has {MIN_LENGTH} to {MAX_LENGTH} characters", field="password"
        )
    if "\x00" in password:
        raise InvalidInput("a password holds no NUL character", field="password")
    return password


def set_password(session: Session, tenant_id: str, *, user_id: str, password: str) -> None:
    """Give a member of `tenant_id` a console password (it replaces the one they had, for
    every tenant they belong to); NotFound ("user") when they are not a member."""
    hashed = _hasher.hash(check_password(password))
    if not set_password_hash(session, tenant_id, user_id=user_id, value=hashed):
        raise NotFound("user not found")
    session.flush()
    log.info("user.password_set", tenant_id=tenant_id, user_id=user_id)


def sign_in(
    session: Session,
    *,
    email: str,
    password: str,
    address: str = "",
    now: datetime | None = None,
) -> str:
    """The id of the user with this email and password; Unauthorized otherwise, counted against
    the account and the client's `address` (`tenants.throttle`, whose counts the caller
    commits); `SignInThrottled` (429) while either is locked, the password left unchecked."""
    refused = Unauthorized("wrong email or password")
    typed = email.strip().lower()[:320]
    try:
        email = _normalise_email(email)
    except InvalidInput:
        email = ""
    attempt = throttle.Attempt(account=email or typed, address=address)
    throttle.check(session, attempt, now=now)
    found = find_sign_in(session, email=email) if email else None
    stored = found[1] if found is not None else None
    try:
        _hasher.verify(stored or _DUMMY, password[:MAX_LENGTH])
    except (VerificationError, InvalidHashError):
        log.info("user.sign_in_refused")
        throttle.record_failure(session, attempt, now=now)
        raise refused from None
    if found is None or stored is None:
        throttle.record_failure(session, attempt, now=now)
        raise refused
    throttle.record_success(session, attempt)
    log.info("user.signed_in", user_id=found[0])
    return found[0]


def sign_out(session: Session, *, user_id: str) -> None:
    """End every console session of the user (the caller commits): each cookie signed before,
    copies included, is refused from then on (`docflow.web.sessions`)."""
    end_user_sessions(session, user_id)
    log.info("user.signed_out", user_id=user_id)


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A signed-in user as the directory knows them now: their tenants with their role in each
    (tenant id, role), by tenant id, the names of those tenants (tenant id, name), and their
    session epoch (-1 for a user gone from the directory: no session matches it)."""

    user_id: str
    email: str
    name: str
    tenants: tuple[tuple[str, str], ...]
    tenant_names: tuple[tuple[str, str], ...] = ()
    epoch: int = -1

    def role_in(self, tenant_id: str) -> str | None:
        return dict(self.tenants).get(tenant_id) if tenant_id else None

    def name_of(self, tenant_id: str) -> str:
        return dict(self.tenant_names).get(tenant_id, tenant_id)


def signed_in(session: Session, *, user_id: str) -> SignedIn:
    """The user a session names, read afresh (a removed user has no tenants, an email "")."""
    user = find_user(session, user_id=user_id)
    if user is None:
        return SignedIn(user_id, "", "", ())
    found = find_tenants_of_user(session, user_id)
    return SignedIn(
        user_id,
        user.email,
        user.name,
        tuple((t, role) for t, _, role in found),
        tuple((t, name) for t, name, _ in found),
        user.session_epoch,
    )
