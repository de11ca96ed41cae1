"""Worker processes (a composition root: it reads Settings).

Three ways to run docflow's durable side (see docs/operations.md):
- `docflow worker` (`run_worker`): queue workers and the scheduler, no HTTP, on PostgreSQL. Any
  number of them share the queues. Each has an executor id, beats in `executor_heartbeats`, and
  recovers the pending work of a worker that stopped beating.
- `docflow serve` (`embedded_runtime`): the same runtime inside the API process, on SQLite (or
  PostgreSQL). SQLite allows exactly one such process per database file (`single_process_lock`).
- `docflow api`: an API process that runs no queue work; it enqueues and reads executions
  through a DBOS client (see `docflow.main.create_app`), so it needs no runtime here.

Executor id policy (`executor_id_for`): `--executor-id`, else `DOCFLOW_EXECUTOR_ID`, else
`{hostname}-{pid}`, except `local` for the embedded process on SQLite (the only process
there). A stable id (e.g. `worker-1` per supervisor slot, or a StatefulSet pod name) lets a
restarted worker resume its own work at once; with the `{hostname}-{pid}` default a restarted
worker gets a new id, and a survivor (or the restarted worker itself) recovers the old id's work
once its heartbeat is older than the timeout.
Two live processes must never share an id.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import structlog
from dbos import DBOS
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from docflow import bootstrap, db
from docflow.config import Settings, UnsafeConfiguration
from docflow.executors.monitor import ExecutorMonitor
from docflow.history.attempts import recording_attempts
from docflow.observability import exposition, metrics
from docflow.observability.sources import installation_scrape
from docflow.runtime import launch
from docflow.system_db import is_sqlite

log = structlog.get_logger(__name__)

EMBEDDED_EXECUTOR_ID = "local"
# The start-up's waits for an unreachable database: the first, and the longest.
FIRST_RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 30.0


class ProcessModeError(RuntimeError):
    """This process kind cannot run on this configuration (e.g. a worker on SQLite)."""


class DatabaseUnreachable(RuntimeError):
    """The database stayed unreachable for all of `startup_retry_seconds` at start-up."""


class StartInterrupted(Exception):
    """Asked to stop (SIGTERM, Ctrl+C) while waiting for the database at start-up."""


def executor_id_for(settings: Settings, override: str | None = None, *, embedded: bool) -> str:
    """The executor id of this process, by the policy in the module docstring."""
    chosen = (override or settings.executor_id).strip()
    if chosen:
        return chosen
    return EMBEDDED_EXECUTOR_ID if embedded else f"{socket.gethostname()}-{os.getpid()}"


def recover_executors(executor_ids: list[str]) -> int:
    """Put the PENDING workflows of these (dead) executors back on their queues; how many."""
    return len(DBOS._recover_pending_workflows(executor_ids))


def make_monitor(settings: Settings, engine: Engine, executor_id: str) -> ExecutorMonitor:
    return ExecutorMonitor(
        db.make_session_factory(engine),
        executor_id=executor_id,
        hostname=socket.gethostname(),
        pid=os.getpid(),
        heartbeat_seconds=settings.heartbeat_seconds,
        timeout_seconds=settings.executor_timeout_seconds,
        recover=recover_executors,
    )


@contextmanager
def worker_runtime(
    settings: Settings,
    *,
    engine: Engine,
    executor_id: str,
    stop: threading.Event | None = None,
    process: str = "worker",
) -> Iterator[None]:
    """DBOS launched with every queue and the schedule, heartbeats and the reaper running
    (`process` names the connections).

    The first beat is written before DBOS may claim any work, so every executor that owns work
    has a row a survivor can find. While the database cannot be reached, the first beat and the
    launch are tried again (`retry_start`). On exit: stop the runtime, then hand the executor
    over (its row expires at once, so a survivor recovers anything left pending without waiting).
    """
    monitor = make_monitor(settings, engine, executor_id)

    def start() -> None:
        monitor.beat()
        launch.launch(
            settings,
            flows=bootstrap.flows(),
            executor_id=executor_id,
            engine=engine,
            process=process,
        )

    retry_start(start, settings=settings, executor_id=executor_id, stop=stop)
    try:
        with running(engine):
            monitor.start()
            log.info("worker.started", executor_id=executor_id)
            yield
    finally:
        monitor.stop(hand_over=True)
        log.info("worker.stopped", executor_id=executor_id)


@contextmanager
def launched(
    settings: Settings, *, engine: Engine, executor_id: str, process: str = "worker"
) -> Iterator[None]:
    """The runtime launched in this process (see `running`)."""
    launch.launch(
        settings, flows=bootstrap.flows(), executor_id=executor_id, engine=engine, process=process
    )
    with running(engine):
        yield


@contextmanager
def running(engine: Engine) -> Iterator[None]:
    """The launched runtime, recording retried step attempts for the history, shut down on
    exit."""
    try:
        with recording_attempts(db.make_session_factory(engine)):
            yield
    finally:
        launch.shutdown()


def retry_start(
    start: Callable[[], None],
    *,
    settings: Settings,
    executor_id: str,
    stop: threading.Event | None = None,
) -> None:
    """Run `start`, and again after each failure to reach the database, waiting 0.5 s, then
    twice as long each time (at most 30 s), for `startup_retry_seconds` in all: then
    `DatabaseUnreachable`. Each failed attempt logs `worker.database_unreachable`; a set `stop`
    (SIGTERM) ends the waiting with `StartInterrupted`."""
    stop = stop if stop is not None else threading.Event()
    deadline = time.monotonic() + settings.startup_retry_seconds
    delay = FIRST_RETRY_SECONDS
    for attempt in itertools.count(1):
        try:
            start()
            return
        except OperationalError as exc:
            reason = _reason(exc)
            wait = min(delay, deadline - time.monotonic())
            if wait <= 0:
                log.error(
                    "worker.database_unreachable",
                    executor_id=executor_id,
                    attempt=attempt,
                    error=reason,
                    giving_up=True,
                )
                raise DatabaseUnreachable(
                    f"the database could not be reached in {attempt} attempts over "
                    f"{settings.startup_retry_seconds:g} s "
                    f"(DOCFLOW_STARTUP_RETRY_SECONDS): {reason}"
                ) from exc
            log.warning(
                "worker.database_unreachable",
                executor_id=executor_id,
                attempt=attempt,
                error=reason,
                retry_in_seconds=round(wait, 2),
            )
            if stop.wait(wait):
                raise StartInterrupted() from exc
        delay = min(delay * 2, MAX_RETRY_SECONDS)


def _reason(exc: OperationalError) -> str:
    """The driver's first line ("connection refused", "database ... does not exist"); it names
    the host and port, never the password."""
    lines = str(exc.orig).strip().splitlines()
    return lines[0] if lines else type(exc.orig).__name__


@contextmanager
def embedded_runtime(
    settings: Settings,
    *,
    engine: Engine,
    executor_id: str,
    after_stop: Callable[[], None] | None = None,
) -> Iterator[None]:
    """The runtime of `docflow serve`: every queue and the schedule in the API's process.

    On SQLite it holds the single-process lock for its whole life, and `after_stop` runs once
    the runtime has stopped, still under the lock (`exit_when_threads_end`: no second process
    starts on the file while this one's threads linger). On PostgreSQL it also beats and reaps
    like a worker, so `serve` processes may run next to `docflow worker` ones.
    """
    if is_sqlite(settings):
        with single_process_lock(settings):
            with launched(settings, engine=engine, executor_id=executor_id, process="serve"):
                yield
            if after_stop is not None:
                after_stop()
        return
    with worker_runtime(settings, engine=engine, executor_id=executor_id, process="serve"):
        yield
    if after_stop is not None:
        after_stop()


def exit_when_threads_end(timeout: float) -> None:
    """For a process command, once its runtime has stopped: wait up to `timeout` seconds for
    the threads the runtime leaves behind (a step finishing, a workflow in a durable wait such
    as a webhook retry's, which would hold the process until the wait ends), then end the
    process at once (status 0) if any is still alive. Their workflows stay PENDING under this
    executor and resume from their last checkpoint when it restarts or a survivor recovers
    them, as after a crash. Never call it in a process that must go on (a test, the demo)."""
    deadline = time.monotonic() + timeout
    for thread in _lingering():
        thread.join(max(0.0, deadline - time.monotonic()))
    left = _lingering()
    if not left:
        return
    log.warning("process.exit_forced", threads=len(left), timeout_seconds=timeout)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _lingering() -> list[threading.Thread]:
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def require_postgres(settings: Settings, what: str) -> None:
    if is_sqlite(settings):
        raise ProcessModeError(
            f"{what} needs PostgreSQL (DOCFLOW_DATABASE_URL=postgresql://...): SQLite runs in "
            "one process only; use `docflow serve`"
        )


def lock_path(settings: Settings) -> Path:
    """The lock file beside the SQLite database file."""
    database = make_url(settings.resolved_database_url()).database or "docflow.db"
    return Path(f"{Path(database).resolve()}.lock")


@contextmanager
def single_process_lock(settings: Settings) -> Iterator[None]:
    """Hold an exclusive lock beside the SQLite file; ProcessModeError when another process
    holds it. The kernel drops the lock when the process dies, so a crash never leaves it."""
    path = lock_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = path.open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise ProcessModeError(
                f"another docflow process already runs on {path.with_suffix('')}: SQLite "
                "mode is one process only (use PostgreSQL for several)"
            ) from exc
        yield
    finally:
        handle.close()


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (call from the main thread)."""
    stop = threading.Event()

    def handle(signum: int, _frame: object) -> None:
        log.info("worker.signal", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return stop


def run_worker(
    settings: Settings, *, executor_id: str | None = None, stop: threading.Event | None = None
) -> None:
    """Run a queue worker (and scheduler) until `stop` is set (default: SIGTERM or SIGINT).

    ProcessModeError on SQLite: several processes need PostgreSQL.
    """
    require_postgres(settings, "docflow worker")
    settings = settings.with_generated_secret()
    settings.check_safe()
    metrics.record(settings.metrics_enabled)
    stop = stop if stop is not None else stop_on_signals()
    engine = launch.app_engine(settings, "worker")
    ident = executor_id_for(settings, executor_id, embedded=False)
    try:
        with (
            serving_metrics(settings, engine),
            worker_runtime(settings, engine=engine, executor_id=ident, stop=stop),
        ):
            stop.wait()
    except StartInterrupted:
        log.info("worker.stopped", executor_id=ident)
    finally:
        engine.dispose()


def worker_command(settings: Settings, *, executor_id: str | None = None) -> None:
    """`docflow worker`: `run_worker` until SIGTERM, then the process ends within
    `shutdown_timeout_seconds` (`exit_when_threads_end`)."""
    run_worker(settings, executor_id=executor_id)
    exit_when_threads_end(settings.shutdown_timeout_seconds)


@contextmanager
def serving_metrics(settings: Settings, engine: Engine) -> Iterator[None]:
    """With `metrics_port` set, serve this worker's metrics (and the installation's gauges) at
    http://metrics_host:metrics_port/metrics meanwhile."""
    if not settings.metrics_port or not settings.metrics_enabled:
        yield
        return
    scrape = installation_scrape(settings, engine, process="worker")
    server, thread = exposition.serve(scrape.registry, settings.metrics_host, settings.metrics_port)
    log.info("worker.metrics", host=settings.metrics_host, port=settings.metrics_port)
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        scrape.close()


def main(argv: list[str] | None = None) -> None:
    """`python -m docflow.worker [--executor-id ID]`: `docflow worker` without loading the rest
    of the command line (a faster start, which matters when a supervisor restarts it)."""
    parser = argparse.ArgumentParser(prog="python -m docflow.worker", description=main.__doc__)
    parser.add_argument("--executor-id", default=None, help="stable id of this worker")
    args = parser.parse_args(argv)
    try:
        worker_command(Settings(), executor_id=args.executor_id)
    except (ProcessModeError, DatabaseUnreachable, UnsafeConfiguration) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(1) from exc


if __name__ == "__main__":
    main()
