"""Record every failed step attempt that DBOS retries, without touching the steps themselves.

DBOS logs one WARNING "Step being automatically retried (attempt N of M)" per failed attempt,
on the step's own thread (so the workflow and step ids are in context) with the error attached.
`StepAttemptRecorder`, a handler on the `dbos` logger, turns each into a `step_attempts` row
holding the error's type name (never its message); the history then reports a step's attempts as
its recorded failures plus the final run. It never raises into DBOS: a row it cannot write is
logged and dropped (the history then undercounts).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from dbos import DBOS
from sqlalchemy.orm import Session, sessionmaker

from docflow.history.repository import StepAttemptRepository
from docflow.kit.clock import utcnow

log = structlog.get_logger(__name__)

_RETRIED = re.compile(r"^Step being automatically retried \(attempt (\d+) of \d+\)")


class StepAttemptRecorder(logging.Handler):
    """A `dbos` log handler writing one `step_attempts` row per retried step attempt."""

    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        super().__init__(level=logging.WARNING)
        self._factory = session_factory

    def emit(self, record: logging.LogRecord) -> None:
        match = _RETRIED.match(record.getMessage())
        execution_id, step = DBOS.workflow_id, DBOS.step_id
        if match is None or execution_id is None or step is None:
            return
        error = record.exc_info[1] if record.exc_info else None
        # The type only: a message may quote a row or a path of the tenant, and this table,
        # keyed by execution id, has no tenant column for row-level security to act on.
        kind = type(error).__name__ if error else "unknown error"
        try:
            with self._factory.begin() as session:
                StepAttemptRepository(session).add(
                    execution_id=execution_id,
                    step=step,
                    attempt=int(match.group(1)),
                    error=kind,
                    failed_at=utcnow(),
                )
        except Exception:
            log.exception("history.attempt_not_recorded", execution_id=execution_id, step=step)


@contextmanager
def recording_attempts(session_factory: sessionmaker[Session]) -> Iterator[None]:
    """Record retried step attempts while the block runs (attach after DBOS is launched, so
    DBOS still installs its own console handler)."""
    handler = StepAttemptRecorder(session_factory)
    logger = logging.getLogger("dbos")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
