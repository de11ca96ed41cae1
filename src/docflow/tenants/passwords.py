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

import structlog
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy.orm import Session

from docflow.errors import InvalidInput, NotFound, Unauthorized
from docflow.tenants.repository import (
    find_memberships_of_user,
    find_sign_in,
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


def sign_in(session: Session, *, email: str, password: str) -> str:
    """The id of the user with this email and password; Unauthorized otherwise."""
    refused = Unauthorized("wrong email or password")
    try:
        email = _normalise_email(email)
    except InvalidInput:
        email = ""
    found = find_sign_in(session, email=email) if email else None
    stored = found[1] if found is not None else None
    try:
        _hasher.verify(stored or _DUMMY, password[:MAX_LENGTH])
    except (VerificationError, InvalidHashError):
        log.info("user.sign_in_refused")
        raise refused from None
    if found is None or stored is None:
        raise refused
    log.info("user.signed_in", user_id=found[0])
    return found[0]


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A signed-in user as the directory knows them now, and their tenants with their role
    in each (tenant id, role), by tenant id."""

    user_id: str
    email: str
    name: str
    tenants: tuple[tuple[str, str], ...]

    def role_in(self, tenant_id: str) -> str | None:
        return dict(self.tenants).get(tenant_id) if tenant_id else None


def signed_in(session: Session, *, user_id: str) -> SignedIn:
    """The user a session names, read afresh (a removed user has no tenants, an email "")."""
    user = find_user(session, user_id=user_id)
    tenants = tuple(find_memberships_of_user(session, user_id)) if user is not None else ()
    return SignedIn(user_id, user.email if user else "", user.name if user else "", tenants)
