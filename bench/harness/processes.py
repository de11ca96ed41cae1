"""Real `docflow` processes on free ports with a temporary data folder: an embedded `serve`
(SQLite, local folder), or on a fresh PostgreSQL database one `api` and any number of `worker`s.

Every process starts from this environment minus any `DOCFLOW_*` setting, so a developer's own
configuration never leaks into a measurement; its output goes to a log file whose tail is quoted
when it fails to start. Memory is read from /proc: VmRSS now, VmHWM the peak so far.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine

from docflow import db
from docflow.config import DEFAULT_SYSTEM_ROLE, Settings
from docflow.system_db import migrate_system_database

POSTGRES_ADMIN_URL = os.environ.get(
    "DOCFLOW_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
APP_ROLE = db.DEFAULT_APP_ROLE
START_TIMEOUT_S = 90.0
COUNT_QUERIES_ENV = "DOCFLOW_COUNT_QUERIES"


LOGS = Path(__file__).resolve().parents[1] / ".cache" / "logs"
# Processes that had to be killed since the list was last emptied (see Process.stop).
UNCLEAN_STOPS: list[str] = []


class BenchError(RuntimeError):
    """A scenario could not run (a process did not start, a batch did not finish in time)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def docflow_command() -> list[str]:
    """The `docflow` program of this interpreter's environment."""
    script = Path(sys.executable).with_name("docflow")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from docflow.cli import app; app()"]


def _proc_status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise BenchError(f"no {key} in /proc/{pid}/status")


@dataclass
class Process:
    """A running `docflow` command and its log."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    query_file: Path | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def rss_mb(self) -> float:
        return _proc_status_kb(self.pid, "VmRSS") / 1024

    def peak_rss_mb(self) -> float:
        return _proc_status_kb(self.pid, "VmHWM") / 1024

    def cpu_seconds(self) -> float:
        """User and system CPU time the process has used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def queries(self, *, written_after: float, timeout: float = 10.0) -> dict[str, Any]:
        """The process's statement counts (DOCFLOW_COUNT_QUERIES), as written after the Unix
        time `written_after` (the process rewrites them five times a second)."""
        if self.query_file is None:
            raise BenchError(f"{self.name} does not count its queries")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                counts: dict[str, Any] = json.loads(self.query_file.read_text())
            except (OSError, json.JSONDecodeError):
                counts = {}
            if counts.get("written_at", 0) > written_after:
                return counts
            self.check_alive()
            time.sleep(0.05)
        raise BenchError(f"{self.name} wrote no query counts within {timeout:.0f} s")

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise BenchError(
                f"{self.name} exited with status {self.popen.returncode}:\n{self.log_tail()}"
            )

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a clean stop), then SIGKILL after `timeout` seconds; a kill is recorded in
        `UNCLEAN_STOPS` (the run notes it: the measurement is over, but it is worth knowing)."""
        if self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            UNCLEAN_STOPS.append(f"{self.name} did not stop within {timeout:.0f} s of SIGTERM")


def _environment(settings: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    return {**env, "DOCFLOW_LOG_FORMAT": "json", **settings}


def spawn(name: str, args: list[str], settings: dict[str, str], folder: Path) -> Process:
    """Start `docflow ARGS` with `settings` (DOCFLOW_* variables), logging into `folder`."""
    log_path = folder / f"{name}.log"
    query_file = settings.get(COUNT_QUERIES_ENV)
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            [*docflow_command(), *args],
            env=_environment(settings),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=folder,
        )
    return Process(name, popen, log_path, Path(query_file) if query_file else None)


def wait_healthy(process: Process, base_url: str, timeout: float = START_TIMEOUT_S) -> None:
    """Poll GET /healthz until it answers 200; BenchError if the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process.check_alive()
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise BenchError(f"{process.name} not healthy after {timeout:.0f} s:\n{process.log_tail()}")


@dataclass
class Deployment:
    """Running docflow processes: where the API answers and how the bench reads the database.

    `read_url` is what the bench itself reads rows and executions with (the SQLite file, or the
    PostgreSQL owner); `settings` point at the same database for a DBOS client.
    """

    base_url: str
    app_url: str
    read_url: str
    settings: Settings
    api: Process
    processes: list[Process] = field(default_factory=list)

    def check_alive(self) -> None:
        for process in self.processes:
            process.check_alive()


@contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    """A temporary folder, removed after; when the block fails, its process logs are kept in
    bench/.cache/logs/ and the error says where."""
    folder = Path(tempfile.mkdtemp(prefix=f"docflow-bench-{prefix}-"))
    try:
        yield folder
    except BaseException as exc:
        kept = LOGS / folder.name
        kept.mkdir(parents=True, exist_ok=True)
        for log in folder.glob("*.log"):
            shutil.copy(log, kept / log.name)
        exc.add_note(f"process logs: {kept}")
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def embedded(
    *, count_queries: bool = False, env: dict[str, str] | None = None, stop_timeout: float = 30.0
) -> Iterator[Deployment]:
    """A fresh `docflow serve` (SQLite and a local folder in a temporary directory), stopped
    after the block (killed if it has not stopped `stop_timeout` seconds after SIGTERM)."""
    with workdir("serve") as folder:
        port = free_port()
        home = folder / "home"
        database = f"sqlite:///{home / 'docflow.db'}"
        settings = {"DOCFLOW_HOME": str(home), **(env or {})}
        if count_queries:
            settings[COUNT_QUERIES_ENV] = str(folder / "queries.json")
        process = spawn("serve", ["serve", "--port", str(port)], settings, folder)
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_healthy(process, base_url)
            yield Deployment(base_url, database, database, Settings(home=home), process, [process])
        finally:
            process.stop(stop_timeout)


@dataclass(frozen=True)
class PostgresDatabase:
    """A migrated database: `owner_url` (the table owner) and `app_url` (the application role)."""

    owner_url: str
    app_url: str


@contextmanager
def postgres_database() -> Iterator[PostgresDatabase]:
    """A new database on the local PostgreSQL, migrated like `docflow migrate`; dropped after."""
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_bench") as owner_url:
        app_url = db.role_url(owner_url, APP_ROLE)
        db.ensure_app_role(owner_url, APP_ROLE)
        db.ensure_system_role(owner_url, DEFAULT_SYSTEM_ROLE)
        db.run_migrations(owner_url, app_role=APP_ROLE)
        settings = Settings(database_url=app_url, migration_database_url=owner_url)
        migrate_system_database(settings, app_role=APP_ROLE)
        yield PostgresDatabase(owner_url, app_url)


def _wait_heartbeats(owner_url: str, count: int, processes: list[Process]) -> None:
    """Wait until `count` workers have written their first heartbeat (they claim work after)."""
    engine = create_engine(owner_url, pool_size=1)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            for process in processes:
                process.check_alive()
            with engine.connect() as conn:
                beating = conn.exec_driver_sql("SELECT count(*) FROM executor_heartbeats").scalar()
            if beating is not None and beating >= count:
                return
            time.sleep(0.2)
    finally:
        engine.dispose()
    raise BenchError(f"{count} workers did not beat within {START_TIMEOUT_S:.0f} s")


@contextmanager
def distributed(*, workers: int, env: dict[str, str] | None = None) -> Iterator[Deployment]:
    """One `docflow api` and `workers` × `docflow worker` on a fresh PostgreSQL database, with
    a local folder as the shared storage."""
    with workdir("distributed") as folder, postgres_database() as pg, ExitStack() as stack:
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        common = {
            "DOCFLOW_DATABASE_URL": pg.app_url,
            "DOCFLOW_MIGRATION_DATABASE_URL": pg.owner_url,
            "DOCFLOW_STORAGE_URL": f"file://{folder / 'files'}",
            "DOCFLOW_PUBLIC_BASE_URL": base_url,
            **(env or {}),
        }
        api = spawn("api", ["api", "--port", str(port)], common, folder)
        stack.callback(api.stop)
        processes = [api]
        for n in range(1, workers + 1):
            worker_env = {**common, "DOCFLOW_EXECUTOR_ID": f"bench-worker-{n}"}
            process = spawn(f"worker-{n}", ["worker"], worker_env, folder)
            stack.callback(process.stop)
            processes.append(process)
        wait_healthy(api, base_url)
        _wait_heartbeats(pg.owner_url, workers, processes)
        settings = Settings(database_url=pg.app_url, migration_database_url=pg.owner_url)
        yield Deployment(base_url, pg.app_url, pg.owner_url, settings, api, processes)
