"""The one retry policy of the durable steps that touch the database (or storage).

Every such step is declared with `db_step(name)`: DBOS runs its body again, up to
`MAX_ATTEMPTS` times with exponential backoff (0.5 s, 1 s, 2 s, ... about a minute in all),
when it raised a transient error (`is_transient`): a lost or terminated connection, a pool
checkout timeout, a serialisation failure or deadlock, a busy SQLite database, a storage I/O
error. Anything else (a domain error, a constraint violation, a bug) surfaces at once:
retrying would only repeat it. Steps are idempotent, so running a body twice is safe.

DBOS's own system-database calls (its checkpoints, the queues) retry connection errors by
themselves without limit, so a lost connection pauses a workflow instead of failing it. A
workflow that still ends in ERROR is run again by `rewind` (from `docflow.reconciler`, or a
replay of its event), from the step that failed; how often is kept in its attributes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import psycopg
import structlog
from dbos import DBOS, DBOSClient, WorkflowStatus
from sqlalchemy import exc as sa_exc

from docflow.observability.metrics import timed_step
from docflow.runtime.context import APP_VERSION

P = ParamSpec("P")
R = TypeVar("R")

log = structlog.get_logger(__name__)

MAX_ATTEMPTS = 8
INTERVAL_SECONDS = 0.5
BACKOFF_RATE = 2.0
# A failed workflow's attributes: how many times it was rewound, and that it was given up on.
REWINDS = "docflow.rewinds"
GAVE_UP = "docflow.gave_up"


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
    """Declare a DBOS step named `name` with the retry policy of this module, each attempt
    timed in `docflow_step_duration_seconds`."""
    step = DBOS.step(
        name=name,
        retries_allowed=True,
        max_attempts=MAX_ATTEMPTS,
        interval_seconds=INTERVAL_SECONDS,
        backoff_rate=BACKOFF_RATE,
        should_retry=is_transient,
    )

    def declare(body: Callable[P, R]) -> Callable[P, R]:
        return step(timed_step(name, body))

    return declare


def rewinds(status: WorkflowStatus) -> int:
    """How many times the workflow was rewound."""
    return int((status.attributes or {}).get(REWINDS, 0))


def failed(client: DBOSClient, workflow_ids: list[str]) -> list[WorkflowStatus]:
    """Those of the workflows that are in ERROR and not given up on (with input and error)."""
    if not workflow_ids:
        return []
    found = client.list_workflows(workflow_ids=workflow_ids, status="ERROR")
    return [w for w in found if not (w.attributes or {}).get(GAVE_UP)]


def rewind(client: DBOSClient, status: WorkflowStatus) -> None:
    """Run a workflow in ERROR again under its own id, on its own queue, from the step that
    failed (the steps before it keep their recorded outputs; after its last step when its own
    code failed), and count it. DBOSException when it is no longer in ERROR."""
    steps = client.list_workflow_steps(status.workflow_id)
    errors = [s["function_id"] for s in steps if s["error"] is not None]
    start = errors[0] if errors else max((s["function_id"] for s in steps), default=0) + 1
    count = rewinds(status) + 1
    client.update_workflow_attributes(status.workflow_id, {REWINDS: count}, merge=True)
    client.rewind_workflow(
        status.workflow_id,
        start_step=start,
        application_version=APP_VERSION,
        queue_name=status.queue_name,
        queue_partition_key=status.queue_partition_key,
    )
    log.warning(
        "workflow.rewound",
        workflow_id=status.workflow_id,
        workflow_name=status.name,
        start_step=start,
        rewinds=count,
    )
