"""Worker processes: the executor id policy, the SQLite single-process rule, heartbeats and the
claim of dead executors (both engines), and, on PostgreSQL, a real survivor process recovering
the pending workflow of a SIGKILLed worker that never comes back."""

from __future__ import annotations

import signal
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from docflow.cli import app as cli_app
from docflow.config import Settings
from docflow.executors.monitor import ExecutorMonitor
from docflow.executors.repository import HeartbeatRepository
from docflow.worker import (
    ProcessModeError,
    executor_id_for,
    run_worker,
    single_process_lock,
)
from support.process_fixtures import FreshPostgres, fresh_postgres, spawn, stop, wait_for

__all__ = ["fresh_postgres"]


def test_executor_id_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    assert executor_id_for(Settings(executor_id="worker-3"), embedded=False) == "worker-3"
    assert executor_id_for(Settings(executor_id="worker-3"), "w-9", embedded=False) == "w-9"
    assert executor_id_for(Settings(), embedded=True) == "local"
    monkeypatch.setattr("socket.gethostname", lambda: "box")
    assert executor_id_for(Settings(), embedded=False).startswith("box-")
    monkeypatch.setenv("DOCFLOW_EXECUTOR_ID", "from-env")
    assert executor_id_for(Settings(), embedded=False) == "from-env"


def test_a_second_process_on_one_sqlite_file_is_refused(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    with (
        single_process_lock(settings),
        pytest.raises(ProcessModeError, match="one process only"),
        single_process_lock(settings),
    ):
        pass
    with single_process_lock(settings):  # released when its holder ends
        pass


def test_workers_refuse_sqlite(tmp_path: Path) -> None:
    with pytest.raises(ProcessModeError, match="PostgreSQL"):
        run_worker(Settings(home=tmp_path), stop=threading.Event())


def _monitor(factory: sessionmaker[Session], me: str, recovered: list[str]) -> ExecutorMonitor:
    def recover(ids: list[str]) -> int:
        recovered.extend(ids)
        return len(ids)

    return ExecutorMonitor(
        factory,
        executor_id=me,
        hostname="test",
        pid=1,
        heartbeat_seconds=0.05,
        timeout_seconds=1.0,
        recover=recover,
    )


def test_a_silent_executor_is_claimed_by_one_survivor_only(
    session_factory: sessionmaker[Session],
) -> None:
    ghost, survivors = _monitor(session_factory, "ghost-1", []), []
    ghost.beat()
    recovered: list[str] = []
    for name in ("survivor-a", "survivor-b", "survivor-c"):
        survivor = _monitor(session_factory, name, recovered)
        survivor.beat()
        survivors.append(survivor)
    assert all(s.reap() == [] for s in survivors)  # everyone is fresh
    threading.Event().wait(1.2)
    for survivor in survivors:
        survivor.beat()
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda s=s: results.append(s.reap())) for s in survivors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(x for r in results for x in r) == ["ghost-1"]
    assert recovered == ["ghost-1"]
    with session_factory() as session:
        assert "ghost-1" not in [h.executor_id for h in HeartbeatRepository(session).all()]


def test_a_failed_recovery_puts_the_row_back(session_factory: sessionmaker[Session]) -> None:
    def failing(_ids: list[str]) -> int:
        raise ConnectionError("system database unreachable")

    _monitor(session_factory, "ghost-2", []).beat()
    threading.Event().wait(1.2)
    survivor = ExecutorMonitor(
        session_factory,
        executor_id="survivor-d",
        hostname="test",
        pid=2,
        heartbeat_seconds=0.05,
        timeout_seconds=1.0,
        recover=failing,
    )
    assert survivor.reap() == []
    with session_factory() as session:
        claimed = HeartbeatRepository(session).claim_dead(
            me="survivor-e", timeout=timedelta(seconds=1.0)
        )
    assert "ghost-2" in [d.executor_id for d in claimed]


def test_a_clean_stop_hands_the_executor_over_at_once(
    session_factory: sessionmaker[Session],
) -> None:
    leaving = _monitor(session_factory, "leaving-1", [])
    leaving.start()
    leaving.stop(hand_over=True)
    recovered: list[str] = []
    survivor = _monitor(session_factory, "survivor-f", recovered)
    assert "leaving-1" in survivor.reap()


def test_the_timeout_must_span_several_beats(session_factory: sessionmaker[Session]) -> None:
    with pytest.raises(ValueError, match="two heartbeats"):
        ExecutorMonitor(
            session_factory,
            executor_id="x",
            hostname="h",
            pid=1,
            heartbeat_seconds=5,
            timeout_seconds=6,
            recover=lambda ids: 0,
        )


@pytest.mark.postgres_only
@pytest.mark.slow
def test_a_survivor_recovers_the_work_of_a_killed_worker(
    fresh_postgres: FreshPostgres, tmp_path: Path
) -> None:
    pg = fresh_postgres
    pg.execute("CREATE TABLE dummy_effects (tag text, what text, executor_id text)")
    url = pg.owner_url
    log = tmp_path / "workers.log"
    survivor = spawn(["-m", "support.dummy_worker", url, "survivor"], {}, log)
    try:
        wait_for(
            lambda: pg.scalar("SELECT count(*) FROM executor_heartbeats") == 1,
            timeout=30,
            what="the survivor's first heartbeat",
        )
        ghost = spawn(["-m", "support.dummy_worker", url, "ghost", "wf-held"], {}, log)
        wait_for(
            lambda: pg.scalar("SELECT count(*) FROM dummy_effects WHERE what = 'start'") == 1,
            timeout=30,
            what="the ghost's workflow to start",
        )
        # Kill it once the start step is checkpointed: a step killed before its checkpoint runs
        # again on recovery (steps are at-least-once), which is not what this test is about.
        wait_for(
            lambda: (
                pg.scalar(
                    "SELECT count(*) FROM dbos.operation_outputs WHERE workflow_uuid = 'wf-held'"
                    " AND function_name LIKE '%mark_step%'"
                )
                >= 1
            ),
            timeout=30,
            what="the ghost's start step to be checkpointed",
        )
        ghost.send_signal(signal.SIGKILL)
        ghost.wait()
        wait_for(
            lambda: (
                pg.scalar("SELECT status FROM dbos.workflow_status WHERE workflow_uuid = 'wf-held'")
                == "SUCCESS"
            ),
            timeout=30,
            what=f"the survivor to finish the ghost's workflow (log: {log.read_text()[-2000:]})",
        )
    finally:
        stop(survivor)
    effects = pg.rows("SELECT what, executor_id FROM dummy_effects ORDER BY what")
    assert effects == [("end", "survivor"), ("start", "ghost")]
    owner = pg.scalar("SELECT executor_id FROM dbos.workflow_status WHERE workflow_uuid='wf-held'")
    assert owner == "survivor"
    assert pg.scalar("SELECT count(*) FROM executor_heartbeats WHERE executor_id='ghost'") == 0


@pytest.mark.parametrize("command", ["api", "worker"])
def test_distributed_commands_refuse_sqlite(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCFLOW_DATABASE_URL", raising=False)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path))
    result = CliRunner().invoke(cli_app, [command])
    assert result.exit_code == 1
    assert "needs PostgreSQL" in result.output and "docflow serve" in result.output
