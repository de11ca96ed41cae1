"""Queries for executor heartbeats.

On PostgreSQL every time comes from the database's clock (`now()`), so workers on machines
whose clocks disagree still agree on who is dead. SQLite is single-machine: the local clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from docflow.db import is_postgres
from docflow.executors.models import ExecutorHeartbeat
from docflow.kit.clock import utcnow

LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class DeadExecutor:
    """An executor whose heartbeat row this caller deleted (and so must recover)."""

    executor_id: str
    hostname: str
    pid: int
    started_at: datetime
    seen_at: datetime


class HeartbeatRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def _now(self) -> Any:
        return func.now() if is_postgres(self.session) else utcnow()

    def _insert(self) -> Any:
        return (postgresql.insert if is_postgres(self.session) else sqlite.insert)(
            ExecutorHeartbeat
        )

    def beat(self, executor_id: str, *, hostname: str, pid: int) -> None:
        """Record that `executor_id` is alive now (insert or refresh its row)."""
        now = self._now()
        stmt = self._insert().values(
            executor_id=executor_id, hostname=hostname, pid=pid, started_at=now, seen_at=now
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[ExecutorHeartbeat.executor_id],
            set_={"seen_at": now, "hostname": hostname, "pid": pid},
        )
        self.session.execute(stmt)

    def claim_dead(self, *, me: str, timeout: timedelta) -> list[DeadExecutor]:
        """Delete and return the rows of other executors not seen for `timeout`.

        One statement (DELETE ... RETURNING), so when several survivors run it at once each
        dead executor is returned to exactly one of them.
        """
        stmt = (
            delete(ExecutorHeartbeat)
            .where(
                ExecutorHeartbeat.seen_at < self._now() - timeout,
                ExecutorHeartbeat.executor_id != me,
            )
            .returning(
                ExecutorHeartbeat.executor_id,
                ExecutorHeartbeat.hostname,
                ExecutorHeartbeat.pid,
                ExecutorHeartbeat.started_at,
                ExecutorHeartbeat.seen_at,
            )
        )
        return [DeadExecutor(*row) for row in self.session.execute(stmt)]

    def restore(self, dead: DeadExecutor) -> None:
        """Put back a claimed row unchanged (its recovery failed), unless the executor has come
        back meanwhile, so a later pass claims it again."""
        stmt = self._insert().values(
            executor_id=dead.executor_id,
            hostname=dead.hostname,
            pid=dead.pid,
            started_at=dead.started_at,
            seen_at=dead.seen_at,
        )
        self.session.execute(stmt.on_conflict_do_nothing(index_elements=["executor_id"]))

    def expire(self, executor_id: str) -> None:
        """Mark `executor_id` as long gone (a clean stop), so a survivor's next pass recovers
        whatever it left pending at once instead of after the timeout."""
        stmt = (
            update(ExecutorHeartbeat)
            .where(ExecutorHeartbeat.executor_id == executor_id)
            .values(seen_at=LONG_AGO)
        )
        self.session.execute(stmt)

    def all(self) -> list[ExecutorHeartbeat]:
        stmt = select(ExecutorHeartbeat).order_by(ExecutorHeartbeat.executor_id)
        return list(self.session.scalars(stmt))
