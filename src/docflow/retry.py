"""The one retry policy of the durable steps that touch the database (or storage).

Every such step is declared with `db_step(name)`: DBOS runs its body again, up to
`MAX_ATTEMPTS` times with exponential backoff (0.5 s, 1 s, 2 s, ... about a minute in all),
when it raised a transient error (`is_transient`): a lost or terminated connection, a pool
checkout timeout, a serialisation failure or deadlock, a busy SQLite database, a storage I/O
error. Anything else (a domain error, a constraint violation, a bug) surfaces at once:
retrying would only repeat it. Steps are idempotent, so running a body twice is safe.

DBOS's own system-database calls (its checkpoints, the queues) retry connection errors by
themselves without limit, so a lost connection pauses a workflow instead of failing it. A
workflow that still ends in ERROR is found by `docflow.reconciler`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import psycopg
from dbos import DBOS
from sqlalchemy import exc as sa_exc

P = ParamSpec("P")
R = TypeVar("R")

MAX_ATTEMPTS = 8
INTERVAL_SECONDS = 0.5
BACKOFF_RATE = 2.0


def is_transient(exc: BaseException) -> bool:
    """Whether another try of the same work may succeed: the database or storage was briefly
    unreachable or busy, not wrong."""
    if isinstance(exc, sa_exc.DisconnectionError | sa_exc.TimeoutError):
        return True  # a dead pooled connection; no connection free in the pool in time
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        if isinstance(exc.orig, sqlite3.Error):
            return _sqlite_busy(exc.orig)
        # PostgreSQL: connection lost or terminated, server shutting down, serialisation
        # failure, deadlock, lock or statement timeout.
        return isinstance(exc, sa_exc.OperationalError)
    if isinstance(exc, psycopg.OperationalError):
        return True
    if isinstance(exc, sqlite3.Error):
        return _sqlite_busy(exc)
    return isinstance(exc, OSError)  # storage I/O, a reset or timed-out connection


def _sqlite_busy(exc: sqlite3.Error) -> bool:
    # SQLite reports a busy database and a malformed statement with the same exception class.
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text


def db_step(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Declare a DBOS step named `name` with the retry policy of this module."""
    return DBOS.step(
        name=name,
        retries_allowed=True,
        max_attempts=MAX_ATTEMPTS,
        interval_seconds=INTERVAL_SECONDS,
        backoff_rate=BACKOFF_RATE,
        should_retry=is_transient,
    )
