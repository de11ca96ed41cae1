"""A worker started while its database cannot be reached waits for it with growing pauses, one
log line per attempt, and starts once it can; it gives up after DOCFLOW_STARTUP_RETRY_SECONDS
and stops at once on SIGTERM meanwhile. Real worker processes; the database becomes reachable
when a relay starts listening on the port their URL names."""

from __future__ import annotations

import re
import signal

import pytest
from sqlalchemy.engine import make_url

from support.faults import FaultEnv, Workers
from support.process_fixtures import free_port, wait_for
from support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]


def _via(url: str, port: int) -> str:
    return make_url(url).set(host="127.0.0.1", port=port).render_as_string(hide_password=False)


def _waits(workers: Workers, executor_id: str) -> list[float]:
    pattern = rf"worker\.database_unreachable\s.*executor_id={executor_id}\s.*"
    return [
        float(match.group(1))
        for line in workers.log_text().splitlines()
        if re.search(pattern, line)
        for match in [re.search(r"retry_in_seconds=([\d.]+)", line)]
        if match
    ]


def test_a_worker_waits_for_its_database_and_starts_once_it_answers(
    fault_env: FaultEnv,
) -> None:
    port = free_port()
    proxy = TcpProxy(port, "127.0.0.1", make_url(fault_env.pg.app_url).port or 5432)
    workers = fault_env.workers("late-database")
    env = {"DOCFLOW_DATABASE_URL": _via(fault_env.pg.app_url, port)}
    try:
        workers.start("late-1", wait=False, **env)
        wait_for(
            lambda: (
                len(_waits(workers, "late-1")) >= 3 or workers.running["late-1"].poll() is not None
            ),
            timeout=60,
            what=f"three failed attempts (log: {workers.log})",
        )
        assert workers.running["late-1"].poll() is None, workers.tail()
        assert _waits(workers, "late-1")[:3] == [0.5, 1.0, 2.0]
        assert "Connection refused" in workers.log_text()
        proxy.start()
        wait_for(
            lambda: workers.events("worker.started", executor_id="late-1") == 1,
            timeout=60,
            what=f"the worker to start once the database answers (log: {workers.log})",
        )
        beats = "SELECT count(*) FROM executor_heartbeats WHERE executor_id = 'late-1'"
        assert fault_env.pg.scalar(beats) == 1
        process = workers.running["late-1"]
        workers.stop_all()
        assert process.returncode == 0, workers.tail()
    finally:
        workers.stop_all()
        proxy.close()


def test_a_worker_gives_up_after_the_startup_retry_limit(fault_env: FaultEnv) -> None:
    workers = fault_env.workers("no-database")
    env = {
        "DOCFLOW_DATABASE_URL": _via(fault_env.pg.app_url, free_port()),
        "DOCFLOW_STARTUP_RETRY_SECONDS": "2",
    }
    try:
        workers.start("never-1", wait=False, **env)
        process = workers.running["never-1"]
        assert process.wait(timeout=60) == 1, workers.tail()
    finally:
        workers.stop_all()
    waits = _waits(workers, "never-1")
    assert waits[:2] == [0.5, 1.0] and sum(waits) <= 2.0
    attempts = workers.events("worker.database_unreachable", executor_id="never-1")
    assert attempts == len(waits) + 1  # the last one gives up
    assert "giving_up=True" in workers.log_text()
    assert (
        f"error: the database could not be reached in {attempts} attempts over 2 s"
        in workers.log_text()
    )


def test_sigterm_stops_a_worker_waiting_for_its_database(fault_env: FaultEnv) -> None:
    workers = fault_env.workers("stopped-waiting")
    env = {"DOCFLOW_DATABASE_URL": _via(fault_env.pg.app_url, free_port())}
    try:
        workers.start("waiting-1", wait=False, **env)
        process = workers.running["waiting-1"]
        wait_for(
            lambda: len(_waits(workers, "waiting-1")) >= 2 or process.poll() is not None,
            timeout=60,
            what="two failed attempts",
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0, workers.tail()
    finally:
        workers.stop_all()
    assert workers.events("worker.stopped", executor_id="waiting-1") == 1
