"""The DBOS system database: where it is, how it is migrated, and SQLite's connection setup.

On SQLite the DBOS tables share the application's file; on PostgreSQL they live in schema `dbos`
of the application database, created by the owner role (`migrate_system_database`).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import tempfile
from typing import Any

from dbos import DBOS
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from docflow import db
from docflow.config import Settings

SYSTEM_SCHEMA = "dbos"


def is_sqlite(settings: Settings) -> bool:
    return make_url(settings.resolved_database_url()).get_backend_name() == "sqlite"


def system_database_url(settings: Settings, *, owner: bool = False) -> str:
    """The DBOS system database URL in the form DBOS expects (`sqlite:///…`, `postgresql://…`).

    `owner` picks the migration (table owner) connection rather than the application's.
    """
    if owner and not settings.system_database_url:
        url = make_url(settings.resolved_migration_database_url())
    else:
        url = make_url(settings.resolved_system_database_url())
    driver = "sqlite" if url.get_backend_name() == "sqlite" else "postgresql"
    return url.set(drivername=driver).render_as_string(hide_password=False)


def sqlite_system_engine(url: str | None) -> Engine:
    """DBOS's engine on the SQLite file: what DBOS sets itself (IMMEDIATE transactions, a 30 s
    busy timeout, foreign keys) plus `synchronous=NORMAL`, as the application's connections
    have. In WAL mode that is still crash-safe for the process (a power cut may lose the last
    commits, of both DBOS and the application, consistently); it halves the cost of a commit,
    which is most of a step's cost."""
    engine = create_engine(
        url or "",
        connect_args={"check_same_thread": False, "timeout": db.SQLITE_BUSY_TIMEOUT_MS / 1000},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute(f"PRAGMA busy_timeout={db.SQLITE_BUSY_TIMEOUT_MS}")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    return engine


def migrate_system_database(settings: Settings, *, app_role: str | None = None) -> None:
    """Create or upgrade the DBOS system tables as the owner role (PostgreSQL: schema `dbos` of
    the application database, granting `app_role` its privileges). On SQLite this only switches
    the file to WAL: DBOS migrates it at launch. Safe to run again."""
    if is_sqlite(settings):
        enable_wal(settings)
        return
    DBOS.migrate(
        system_database_url(settings, owner=True),
        schema=SYSTEM_SCHEMA,
        application_role=db.check_role_name(app_role) if app_role else None,
    )


def enable_wal(settings: Settings) -> None:
    """Put the SQLite file in WAL mode before DBOS opens it (DBOS sets no journal mode, and the
    rollback journal makes every commit several times slower). WAL persists in the file."""
    path = make_url(system_database_url(settings)).database
    if not path or path == ":memory:":
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    conn = sqlite3.connect(path, timeout=db.SQLITE_BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()


@functools.cache
def dbos_table_names() -> frozenset[str]:
    """The names of DBOS's own tables, as this DBOS version creates them (read from a scratch
    SQLite database it migrates): on SQLite they share the application's file, so schema
    comparisons and autogeneration must leave them out."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "dbos.sqlite")
        DBOS.migrate(f"sqlite:///{path}")
        conn = sqlite3.connect(path)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        finally:
            conn.close()
    return frozenset(name for (name,) in rows if not name.startswith("sqlite_"))
