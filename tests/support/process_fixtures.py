"""Fixtures for tests that run real worker processes: a fresh migrated PostgreSQL database per
test module, and helpers to start, wait for and kill `python -m ...` subprocesses.

Import into a module with `from support.process_fixtures import fresh_postgres  # noqa: F401`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

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
