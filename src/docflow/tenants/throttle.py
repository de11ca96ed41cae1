"""Throttling console password sign-ins, in the database so every API process counts alike.

Failures are counted under three keys, each a SHA-256 (no email or address is stored):
- the pair (account, client address): `PAIR_LIMIT` failures within `WINDOW` lock that address
  out of that account. This stops one attacker guessing one account, and leaves the account's
  owner free to sign in from anywhere else;
- the client address: `ADDRESS_LIMIT` failures (on any accounts) lock the address out of every
  account, which stops one address spraying many accounts;
- the account: `ACCOUNT_LIMIT` failures (from any addresses) lock the account for everyone. This
  is the price of stopping guesses spread over many addresses: such an attacker can keep the
  account locked, but only while it keeps failing, a lock at a time, each at most `MAX_LOCK`;
  the limit is high so one attacker never reaches it before their own address is locked.

A lock lasts `FIRST_LOCK`, then twice as long at each new lock of the same key, up to
`MAX_LOCK`; it always expires. A locked key answers `SignInThrottled` (429 with `Retry-After`)
without checking the password, right or wrong. A successful sign-in clears the pair and the
account (the owner proved themselves); the address keeps its count, so an attacker who signs in
to an account of its own does not wipe its spraying record. Every refusal is logged
`user.sign_in_throttled`, every new lock `user.sign_in_locked`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from docflow.errors import TooManyRequests
from docflow.kit.clock import as_utc, utcnow
from docflow.tenants.models import SignInThrottle
from docflow.tenants.repository import delete_throttles, lock_throttles, read_throttles

log = structlog.get_logger(__name__)

WINDOW = timedelta(minutes=15)
PAIR_LIMIT = 5
ADDRESS_LIMIT = 20
ACCOUNT_LIMIT = 50
FIRST_LOCK = timedelta(seconds=30)
MAX_LOCK = timedelta(minutes=15)


class SignInThrottled(TooManyRequests):
    """Too many failed sign-ins for this account or from this address: wait `Retry-After`."""

    code = "sign_in_throttled"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:64]


@dataclass(frozen=True, slots=True)
class Attempt:
    """A password sign-in: the account (the email as typed, normalised when it is one) and the
    client's address."""

    account: str
    address: str

    def limits(self) -> dict[str, int]:
        """Each throttle key of this attempt -> how many failures lock it."""
        return {
            f"pair:{_digest(self.account, self.address)}": PAIR_LIMIT,
            f"address:{_digest(self.address)}": ADDRESS_LIMIT,
            f"account:{_digest(self.account)}": ACCOUNT_LIMIT,
        }


def lock_length(locks: int) -> timedelta:
    """How long the `locks`-th lock (1 the first) of a key lasts."""
    return min(MAX_LOCK, FIRST_LOCK * (2 ** min(max(locks - 1, 0), 16)))


def _retry_after(locked_until: datetime, now: datetime) -> int:
    return max(1, int((as_utc(locked_until) - now).total_seconds() + 0.999))


def check(session: Session, attempt: Attempt, *, now: datetime | None = None) -> None:
    """`SignInThrottled` when a key of `attempt` is locked now (logged, with the kind of key)."""
    now = now or utcnow()
    locked = [
        (row.key.partition(":")[0], row.locked_until)
        for row in read_throttles(session, list(attempt.limits()))
        if row.locked_until is not None and as_utc(row.locked_until) > now
    ]
    if not locked:
        return
    until = max(until for _, until in locked if until is not None)
    retry = _retry_after(until, now)
    log.warning(
        "user.sign_in_throttled", keys=sorted(kind for kind, _ in locked), retry_after=retry
    )
    raise SignInThrottled(
        f"too many failed sign-ins: try again in {retry} s",
        headers={"Retry-After": str(retry)},
        retry_after=retry,
    )


def _rows(session: Session, keys: list[str], now: datetime) -> dict[str, SignInThrottle]:
    """The rows of `keys`, locked, those missing made (a sign-in making the same row at the
    same moment wins; this one then locks it)."""
    rows = lock_throttles(session, keys)
    missing = [key for key in keys if key not in rows]
    if missing:
        try:
            with session.begin_nested():
                session.add_all(
                    SignInThrottle(key=k, failures=0, window_started_at=now) for k in missing
                )
        except IntegrityError:
            pass
        rows = lock_throttles(session, keys)
    return rows


def record_failure(session: Session, attempt: Attempt, *, now: datetime | None = None) -> None:
    """Count a failed sign-in under each key of `attempt`, locking a key that reaches its limit
    within the window (logged `user.sign_in_locked`)."""
    now = now or utcnow()
    limits = attempt.limits()
    for key, row in _rows(session, sorted(limits), now).items():
        if now - as_utc(row.window_started_at) >= WINDOW:
            row.failures, row.window_started_at = 0, now
            if row.locked_until is None or now - as_utc(row.locked_until) >= MAX_LOCK:
                row.locks = 0  # quiet long enough: the next lock is a first one again
        row.failures += 1
        if row.failures >= limits[key]:
            row.locks += 1
            row.locked_until = now + lock_length(row.locks)
            row.failures, row.window_started_at = 0, now
            log.warning(
                "user.sign_in_locked",
                key=key.partition(":")[0],
                locks=row.locks,
                seconds=int(lock_length(row.locks).total_seconds()),
            )
    session.flush()


def record_success(session: Session, attempt: Attempt) -> None:
    """Clear the pair's and the account's counts and locks (the address keeps its own)."""
    keys = [key for key in attempt.limits() if not key.startswith("address:")]
    delete_throttles(session, keys)
