"""Heartbeats and the reaper: a worker that dies and never comes back does not strand its work.

DBOS, without its hosted coordinator, recovers an executor's PENDING workflows only when that
same executor id launches again. So every worker refreshes its row in `executor_heartbeats`
every `heartbeat_seconds` (on a thread of its own, so a busy worker still beats), and on every
beat also looks for rows older than `timeout_seconds`. Deleting such a row is the claim: one
DELETE ... RETURNING statement, so each dead executor goes to exactly one survivor, which then
calls `recover([dead ids])` (DBOS puts those workflows back on their queues; any live worker
picks them up and replays them from their checkpoints). If recovery fails the row is put back,
so a later pass tries again.

A false positive (a live worker that missed beats for longer than the timeout) is safe but
wasteful: the step in flight may run twice, and DBOS keeps one outcome. Hence the generous
defaults (5 s beats, 30 s timeout).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import structlog
from sqlalchemy.orm import Session, sessionmaker

from docflow.executors.repository import DeadExecutor, HeartbeatRepository

log = structlog.get_logger(__name__)

Recover = Callable[[list[str]], int]
"""Recover the pending workflows of these executor ids; returns how many were recovered."""


class ExecutorMonitor:
    """The heartbeat and reaper of one worker process (`executor_id`)."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        executor_id: str,
        hostname: str,
        pid: int,
        heartbeat_seconds: float,
        timeout_seconds: float,
        recover: Recover,
    ) -> None:
        if timeout_seconds < 2 * heartbeat_seconds:
            raise ValueError("the executor timeout must be at least two heartbeats")
        self._factory = session_factory
        self.executor_id = executor_id
        self._hostname = hostname
        self._pid = pid
        self._interval = heartbeat_seconds
        self._timeout = timedelta(seconds=timeout_seconds)
        self._recover = recover
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        """Record this executor as alive now."""
        with self._factory.begin() as session:
            HeartbeatRepository(session).beat(
                self.executor_id, hostname=self._hostname, pid=self._pid
            )

    def reap(self) -> list[str]:
        """Claim the executors that stopped beating and recover their pending workflows;
        returns the ids this call recovered."""
        with self._factory.begin() as session:
            dead = HeartbeatRepository(session).claim_dead(
                me=self.executor_id, timeout=self._timeout
            )
        recovered: list[str] = []
        for executor in dead:
            if self._recover_one(executor):
                recovered.append(executor.executor_id)
        return recovered

    def _recover_one(self, executor: DeadExecutor) -> bool:
        try:
            count = self._recover([executor.executor_id])
        except Exception:
            log.exception("executor.recovery_failed", dead_executor=executor.executor_id)
            with self._factory.begin() as session:
                HeartbeatRepository(session).restore(executor)
            return False
        log.warning(
            "executor.recovered",
            executor_id=self.executor_id,
            dead_executor=executor.executor_id,
            dead_host=executor.hostname,
            dead_pid=executor.pid,
            workflows=count,
        )
        return True

    def start(self) -> None:
        """Beat once now (so this executor is known before it claims any work), then beat and
        reap on a daemon thread until `stop()`."""
        self.beat()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{self.executor_id}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            # A database blip must not end the heartbeat: log it and try again next time.
            try:
                self.beat()
                self.reap()
            except Exception:
                log.exception("executor.heartbeat_failed", executor_id=self.executor_id)

    def stop(self, *, hand_over: bool = True) -> None:
        """Stop beating. With `hand_over` (call it once this process runs no more workflows),
        mark this executor as gone so a survivor recovers what it left pending right away."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._interval + 5)
        if hand_over:
            with self._factory.begin() as session:
                HeartbeatRepository(session).expire(self.executor_id)
