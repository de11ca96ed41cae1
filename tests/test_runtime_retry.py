"""The one retry policy of the durable steps: transient database errors are retried, and
succeed once the database is back; domain errors and bugs surface at once."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbos import DBOS
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from docflow import db
from docflow.errors import NotFound
from docflow.runtime.retry import db_step, is_transient
from support.db_fixtures import POSTGRES_ADMIN_URL, on_postgres
from support.dbos_fixtures import DbosEnv, dbos_env  # noqa: F401

_calls: dict[str, int] = {}


@pytest.fixture
def locked_sqlite(tmp_path: Path) -> Iterator[tuple[str, threading.Event]]:
    """A SQLite file whose write lock another connection holds until the event is set."""
    path = tmp_path / "locked.db"
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE t (x INTEGER)")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Event()

    def hold() -> None:
        release.wait(timeout=30)
        holder.execute("COMMIT")
        holder.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        yield f"sqlite:///{path}", release
    finally:
        release.set()
        thread.join()


def _write(url: str) -> None:
    engine = create_engine(url, connect_args={"timeout": 0})
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        engine.dispose()


def test_a_busy_sqlite_database_is_transient_a_malformed_statement_is_not(
    locked_sqlite: tuple[str, threading.Event],
) -> None:
    url, _ = locked_sqlite
    with pytest.raises(OperationalError) as locked:
        _write(url)
    assert "database is locked" in str(locked.value)
    assert is_transient(locked.value)

    engine = create_engine(url)
    try:
        with pytest.raises(OperationalError) as missing, engine.connect() as conn:
            conn.execute(text("SELECT * FROM no_such_table"))
    finally:
        engine.dispose()
    assert not is_transient(missing.value)


def test_domain_errors_and_constraint_violations_are_not_transient() -> None:
    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER PRIMARY KEY)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    with pytest.raises(IntegrityError) as duplicate, engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
    engine.dispose()
    assert not is_transient(duplicate.value)
    assert not is_transient(NotFound("gone"))
    assert not is_transient(ValueError("bad input"))
    assert is_transient(OSError("storage unreachable"))
    assert is_transient(ConnectionResetError())


@pytest.mark.skipif(not on_postgres(), reason="a PostgreSQL backend terminated by an operator")
def test_a_terminated_postgresql_connection_is_transient() -> None:
    engine = db.make_engine(POSTGRES_ADMIN_URL, pool_size=1)
    admin = db.make_engine(POSTGRES_ADMIN_URL, pool_size=1)
    try:
        with engine.connect() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            with admin.begin() as other:
                other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            with pytest.raises(DBAPIError) as terminated:
                conn.execute(text("SELECT 1"))
    finally:
        engine.dispose()
        admin.dispose()
    assert is_transient(terminated.value)


@db_step("test.write_when_unlocked")
def write_step(url: str) -> int:
    _calls["write"] = _calls.get("write", 0) + 1
    _write(url)
    return _calls["write"]


@db_step("test.not_found")
def not_found_step() -> None:
    _calls["not_found"] = _calls.get("not_found", 0) + 1
    raise NotFound("no such thing")


@DBOS.workflow(name="test.retry_flow")
def retry_flow(url: str) -> int:
    return write_step(url)


@DBOS.workflow(name="test.not_found_flow")
def not_found_flow() -> None:
    not_found_step()


def test_a_step_that_finds_the_database_locked_once_is_retried_and_succeeds(
    dbos_env: DbosEnv,  # noqa: F811
    locked_sqlite: tuple[str, threading.Event],
) -> None:
    url, release = locked_sqlite
    _calls.clear()
    # The first attempt fails at once ("database is locked"); the lock goes during the wait
    # before the second.
    threading.Timer(0.2, release.set).start()
    handle = DBOS.start_workflow(retry_flow, url)
    assert handle.get_result() == 2
    assert handle.get_status().status == "SUCCESS"


def test_a_step_raising_a_domain_error_is_not_retried(dbos_env: DbosEnv) -> None:  # noqa: F811
    _calls.clear()
    handle = DBOS.start_workflow(not_found_flow)
    with pytest.raises(NotFound):
        handle.get_result()
    assert _calls["not_found"] == 1
