"""The DBOS system database: where it is, who may touch it, how it is migrated and serialized.

On SQLite the DBOS tables share the application's file. On PostgreSQL they live in schema `dbos`
of the application database, created by the owner role (`migrate_system_database`), and DBOS
connects as a role of its own (`docflow_system` by default): the application role, bound by
row-level security, may only add workflows there (`enqueue_in_transaction` inside its own
transaction) and cannot read any workflow's inputs, outputs or errors, nor change them.

Everything DBOS stores is JSON (`DurableJson`, see `docflow.kit.durable_json`); DBOS's pickle
serializer is disabled in the process (`refuse_pickle`), so a row marked as a pickle is refused
rather than unpickled.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from dbos import DBOS, Serializer
from dbos._serialization import DefaultSerializer
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Connection, make_url

from docflow import db
from docflow.config import Settings
from docflow.kit import durable_json

SYSTEM_SCHEMA = "dbos"
# What the application role may do in schema `dbos`: insert a workflow and its input, and read
# back the few columns of its own insert's RETURNING (DBOS checks an existing workflow's name
# and queue, and keeps its serialization), through DBOS's no-op ON CONFLICT update.
_ENQUEUE_GRANTS = (
    "GRANT INSERT ON {s}.workflow_status, {s}.workflow_input TO {r}",
    "GRANT SELECT (workflow_uuid, status, name, class_name, config_name, queue_name, "
    "creator_xid, serialization) ON {s}.workflow_status TO {r}",
    "GRANT UPDATE (creator_xid) ON {s}.workflow_status TO {r}",
    "GRANT SELECT (workflow_uuid) ON {s}.workflow_input TO {r}",
)


class UnsafeSerialization(RuntimeError):
    """A durable row marked as a Python pickle: docflow never reads one."""


class DurableJson(Serializer):
    """DBOS's serializer in every docflow process and client: JSON, no pickle."""

    def serialize(self, data: Any) -> str:
        return durable_json.dumps(data)

    def deserialize(self, serialized_data: str) -> Any:
        return durable_json.loads(serialized_data)

    def name(self) -> str:
        return "docflow_json"


SERIALIZER = DurableJson()


def _refused_pickle(_self: Any, _serialized: str) -> Any:
    raise UnsafeSerialization(
        "durable state marked as a Python pickle is never read; docflow writes JSON only "
        "(drain workflows started by a version that wrote pickles before upgrading)"
    )


def _json_not_pickle(_self: Any, data: Any) -> str:
    return SERIALIZER.serialize(data)


def refuse_pickle() -> None:
    """Disable DBOS's pickle serializer in this process. DBOS picks the serializer from the
    `serialization` column of each row, whatever it was configured with, so a row marked
    `py_pickle` would be unpickled; now reading one raises `UnsafeSerialization` (a workflow
    whose input is such a row ends ERROR without running), and whatever DBOS would file under
    that mark (the refusal itself) is written as JSON. Safe to call again."""
    DefaultSerializer.deserialize = _refused_pickle  # type: ignore[method-assign,assignment]
    DefaultSerializer.serialize = _json_not_pickle  # type: ignore[method-assign,assignment]


def is_sqlite(settings: Settings) -> bool:
    return make_url(settings.resolved_database_url()).get_backend_name() == "sqlite"


def system_database_url(settings: Settings, *, owner: bool = False) -> str:
    """The DBOS system database URL in the form DBOS expects (`sqlite:///…`, `postgresql://…`).

    `owner` picks the migration (table owner) connection rather than DBOS's own role's.
    """
    if owner:
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


def system_role(settings: Settings) -> str:
    """The PostgreSQL role DBOS connects as (the user of the system database URL)."""
    return db.check_role_name(make_url(system_database_url(settings)).username or "")


def migrate_system_database(settings: Settings, *, app_role: str | None = None) -> None:
    """Create or upgrade the DBOS system tables as the owner role. PostgreSQL: schema `dbos` of
    the application database, every privilege on it granted to the system role (which must
    exist, see `db.ensure_system_role`), and to `app_role` only what enqueueing in its own
    transaction needs (any other privilege it held there is revoked). On SQLite this only
    switches the file to WAL: DBOS migrates it at launch. Safe to run again."""
    if is_sqlite(settings):
        enable_wal(settings)
        return
    owner_url = system_database_url(settings, owner=True)
    role = system_role(settings)
    if app_role is not None and db.check_role_name(app_role) == role:
        raise ValueError(
            f"DBOS must not connect as the application role {role}: set "
            "DOCFLOW_SYSTEM_DATABASE_URL to another role (see docs/operations.md)"
        )
    DBOS.migrate(owner_url, schema=SYSTEM_SCHEMA, application_role=role)
    if app_role is not None:
        engine = db.make_engine(owner_url, pool_size=1)
        try:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                _grant_enqueue_only(conn, app_role)
        finally:
            engine.dispose()


def _grant_enqueue_only(conn: Connection, role: str) -> None:
    schema = SYSTEM_SCHEMA
    for kind in ("TABLES", "SEQUENCES", "FUNCTIONS"):
        conn.exec_driver_sql(f"REVOKE ALL ON ALL {kind} IN SCHEMA {schema} FROM {role}")
        # Earlier versions granted the application role everything, now and for later tables.
        conn.exec_driver_sql(
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} REVOKE ALL ON {kind} FROM {role}"
        )
    conn.exec_driver_sql(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
    for grant in _ENQUEUE_GRANTS:
        conn.exec_driver_sql(grant.format(s=schema, r=role))


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


@dataclass(frozen=True, slots=True)
class Backlog:
    """Workflows waiting on a queue (`tenant`: of one queue partition, else None for the whole
    queue) and how long the oldest of them has waited, in seconds."""

    queue: str
    tenant: str | None
    waiting: int
    oldest_seconds: float


def queue_backlog(engine: Engine, *, top_tenants: int) -> list[Backlog]:
    """Every queue's waiting workflows (ENQUEUED: not yet taken by a worker), and those of the
    `top_tenants` partitions (tenants) with the most waiting, read from DBOS's status table on
    `engine`, a connection of the system role (on SQLite, the application's file)."""
    table = (
        "workflow_status" if engine.dialect.name == "sqlite" else f"{SYSTEM_SCHEMA}.workflow_status"
    )
    now_ms = time.time() * 1000
    queues = text(
        f"SELECT queue_name, count(*) AS waiting, min(created_at) AS oldest FROM {table} "
        "WHERE status = 'ENQUEUED' AND queue_name IS NOT NULL GROUP BY queue_name"
    )
    tenants = text(
        f"SELECT queue_name, queue_partition_key AS tenant, count(*) AS waiting, "
        f"min(created_at) AS oldest FROM {table} "
        "WHERE status = 'ENQUEUED' AND queue_partition_key IS NOT NULL "
        "GROUP BY queue_name, queue_partition_key ORDER BY waiting DESC LIMIT :top"
    )
    with engine.connect() as conn:
        rows = [(r.queue_name, None, r.waiting, r.oldest) for r in conn.execute(queues)]
        if top_tenants > 0:
            found = conn.execute(tenants, {"top": top_tenants})
            rows += [(r.queue_name, r.tenant, r.waiting, r.oldest) for r in found]
    return [
        Backlog(queue, tenant, int(waiting), max(0.0, (now_ms - int(oldest)) / 1000))
        for queue, tenant, waiting, oldest in rows
    ]
