"""Fixtures for tests that run real processes: a fresh migrated PostgreSQL database per test
module, helpers to start, wait for and kill `python -m ...` subprocesses, and `served`, a real
`docflow serve` on a free port.

Import into a module with `from support.process_fixtures import fresh_postgres  # noqa: F401`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from docflow import db
from support.db_fixtures import APP_ROLE, POSTGRES_ADMIN_URL, SYSTEM_ROLE

TESTS_DIR = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class FreshPostgres:
    """A migrated database: `owner_url` (table owner) and `app_url` (the application role)."""

    owner_url: str
    app_url: str

    def execute(self, sql: str) -> None:
        engine = create_engine(self.owner_url, pool_size=1)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(sql)
        finally:
            engine.dispose()

    def scalar(self, sql: str, **params: object) -> object:
        engine = create_engine(self.owner_url, pool_size=1)
        try:
            with engine.begin() as conn:
                return conn.execute(text(sql), params).scalar()
        finally:
            engine.dispose()

    def rows(self, sql: str, **params: object) -> list[tuple[object, ...]]:
        engine = create_engine(self.owner_url, pool_size=1)
        try:
            with engine.begin() as conn:
                return [tuple(r) for r in conn.execute(text(sql), params)]
        finally:
            engine.dispose()


@pytest.fixture(scope="module")
def fresh_postgres() -> Iterator[FreshPostgres]:
    """A new database, migrated as its owner, with the application role; dropped after."""
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_proc") as owner_url:
        db.ensure_app_role(owner_url, APP_ROLE)
        db.ensure_system_role(owner_url, SYSTEM_ROLE)
        db.run_migrations(owner_url, app_role=APP_ROLE)
        yield FreshPostgres(owner_url=owner_url, app_url=db.role_url(owner_url, APP_ROLE))


def errors_in(log: str) -> list[str]:
    """The lines of a process's output that report an error: a structured log line at error
    level or above, DBOS's own ERROR lines, or a traceback."""
    markers = ('"level": "error"', '"level": "critical"', "[   ERROR]", "Traceback")
    return [line for line in log.splitlines() if any(m in line for m in markers)]


def spawn(args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start `python ARGS` with tests/ on the path, its output appended to `log_path`."""
    full_env = {**os.environ, **env, "PYTHONPATH": str(TESTS_DIR)}
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, *args], env=full_env, stdout=log, stderr=subprocess.STDOUT
        )


def wait_for(
    condition: Callable[[], bool], *, timeout: float, what: str, interval: float = 0.1
) -> None:
    """Poll `condition` until it holds; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def stop(process: subprocess.Popen[bytes], *, timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if it does not exit within `timeout`."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Served:
    """A running `docflow serve` process (embedded, SQLite in `home`) and its output."""

    process: subprocess.Popen[bytes]
    base_url: str
    home: Path
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def served(home: Path, log: Path, env: dict[str, str] | None = None) -> Iterator[Served]:
    """`docflow serve` on a free port with its own home, stopped (SIGTERM) at the end."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    full_env = {**clean, "DOCFLOW_HOME": str(home), "DOCFLOW_PORT": str(port), **(env or {})}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", "serve"], env=full_env, stdout=out, stderr=out
        )
    result = Served(process, f"http://127.0.0.1:{port}", home, log)
    try:
        wait_for(
            lambda: process.poll() is not None or answers(f"{result.base_url}/healthz"),
            timeout=120,
            what="docflow serve to answer",
        )
        assert process.poll() is None, result.output()[-3000:]
        yield result
    finally:
        stop(process, timeout=30)


def answers(url: str) -> bool:
    """Whether `url` answers 200 now."""
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False
