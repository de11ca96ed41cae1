"""Database plumbing: the declarative base, engines, sessions, tenant binding and migrations.

Two engines, one schema: SQLite (embedded, WAL) and PostgreSQL (distributed, row-level security).
On PostgreSQL every transaction of a session bound to a tenant starts with
`set_config('app.tenant_id', <tenant>, true)`, which the RLS policies of every tenant table read;
the application connects as a role that does not own the tables, so the policies always apply.
The schema comes only from the Alembic migrations (`run_migrations`), never from `create_all`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, DateTime, Dialect, Engine, MetaData, create_engine, event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.orm import DeclarativeBase, Session, SessionTransaction, sessionmaker
from sqlalchemy.types import TypeDecorator

DEFAULT_APP_ROLE = "docflow_app"
TENANT_SETTING = "app.tenant_id"
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
# DBOS waits 30 s for the SQLite write lock; the application's connections wait as long.
SQLITE_BUSY_TIMEOUT_MS = 30_000
IMMEDIATE_OPTION = "docflow_sqlite_immediate"

_NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
}


class Base(DeclarativeBase):
    """The one declarative base; every model's table lives in `Base.metadata`."""

    metadata = MetaData(naming_convention=_NAMING)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both engines (SQLite stores them naive, in UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    @property
    def python_type(self) -> type[datetime]:
        return datetime

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTCDateTime column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# Plain JSON on both engines: PostgreSQL `json` keeps the text as written (key order included),
# which matters for replayed idempotent responses and stored definitions.
JSONType = JSON


def _normalise_url(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() != "psycopg":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def _sqlite_engine(url: str) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin (see "begin"),
        # so SAVEPOINTs and transactional DDL behave as on PostgreSQL.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that reads and then writes fails at once (SQLITE_BUSY, no wait)
        # when another writer committed in between; write transactions take the lock up front.
        immediate = conn.get_execution_options().get(IMMEDIATE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def make_engine(
    url: str,
    *,
    pool_size: int = 10,
    max_overflow: int | None = None,
    application_name: str | None = None,
) -> Engine:
    """An engine for `url`: SQLite with WAL, foreign keys and a busy timeout; PostgreSQL through
    psycopg 3 with a pool of `pool_size` kept connections and up to `max_overflow` more at a
    peak (default: as many again), each pre-pinged when taken (a connection the server closed,
    a restart, is replaced instead of failing), named `application_name` on the server."""
    url = _normalise_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    connect_args = {"application_name": application_name} if application_name else {}
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size if max_overflow is None else max_overflow,
        pool_pre_ping=True,
        connect_args=connect_args,
    )


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit (the edge commits, then renders)."""
    return sessionmaker(bind=engine, expire_on_commit=False)


def make_write_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions for read-then-write transactions: on SQLite each transaction begins IMMEDIATE
    (takes the write lock first, waiting up to the busy timeout), so it never fails half-way
    because another connection wrote; on PostgreSQL the same as `make_session_factory`."""
    if engine.dialect.name == "sqlite":
        engine = engine.execution_options(**{IMMEDIATE_OPTION: True})
    return sessionmaker(bind=engine, expire_on_commit=False)


def is_postgres(session_or_conn: Session | Connection) -> bool:
    bind = session_or_conn.get_bind() if isinstance(session_or_conn, Session) else session_or_conn
    return bind.dialect.name == "postgresql"


def _set_tenant(conn: Connection, tenant_id: str) -> None:
    conn.execute(
        text("SELECT set_config(:name, :t, true)"), {"name": TENANT_SETTING, "t": tenant_id}
    )


def bind_tenant(session: Session, tenant_id: str) -> None:
    """Scope `session` to `tenant_id` from now on.

    Records the tenant in `session.info`; on PostgreSQL, sets `app.tenant_id` for the current
    transaction (if one is open) and, through the `after_begin` hook, at the start of every later
    transaction of this session, so a commit does not drop it. Rebinding to another tenant
    switches the scope for the rest of the session.
    """
    if not tenant_id:
        raise ValueError("tenant_id is required")
    if session.info.get("tenant_id") == tenant_id:
        return
    session.info["tenant_id"] = tenant_id
    if session.in_transaction() and is_postgres(session):
        _set_tenant(session.connection(), tenant_id)


def bound_tenant(session: Session) -> str | None:
    """The tenant `session` is bound to, if any."""
    tenant_id = session.info.get("tenant_id")
    return tenant_id if isinstance(tenant_id, str) else None


@event.listens_for(Session, "after_begin")
def _apply_tenant(session: Session, _tx: SessionTransaction, conn: Connection) -> None:
    tenant_id = bound_tenant(session)
    if tenant_id and conn.dialect.name == "postgresql":
        _set_tenant(conn, tenant_id)


def load_models() -> MetaData:
    """Import every model module so `Base.metadata` is complete; returns it."""
    from docflow.batches import models as _batches  # noqa: F401
    from docflow.documents import models as _documents  # noqa: F401
    from docflow.encryption import models as _encryption  # noqa: F401
    from docflow.events import models as _events  # noqa: F401
    from docflow.executors import models as _executors  # noqa: F401
    from docflow.history import models as _history  # noqa: F401
    from docflow.idempotency import models as _idempotency  # noqa: F401
    from docflow.llm import models as _llm  # noqa: F401
    from docflow.projects import models as _projects  # noqa: F401
    from docflow.quotas import models as _quotas  # noqa: F401
    from docflow.review import models as _review  # noqa: F401
    from docflow.search import models as _search  # noqa: F401
    from docflow.sources import models as _sources  # noqa: F401
    from docflow.tenants import models as _tenants  # noqa: F401
    from docflow.trust import models as _trust  # noqa: F401
    from docflow.webhooks import models as _webhooks  # noqa: F401
    from docflow.workflows import models as _workflows  # noqa: F401

    return Base.metadata


_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def check_role_name(role: str) -> str:
    """`role` if it is a plain lowercase SQL identifier (it is interpolated into DDL)."""
    if not _ROLE_NAME.match(role):
        raise ValueError(f"invalid role name: {role!r}")
    return role


def rls_statements(table: str, tenant_column: str = "tenant_id") -> list[str]:
    """PostgreSQL DDL that confines `table` to the rows of the tenant in `app.tenant_id`.

    FORCE makes the policy apply to the table owner too; `current_setting(..., true)` is NULL or ''
    when no tenant is set, which matches no row and lets no row be written.
    """
    predicate = f"{tenant_column} = current_setting('{TENANT_SETTING}', true)"
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY tenant_isolation ON {table} USING ({predicate}) WITH CHECK ({predicate})",
    ]


def _alembic_config(url: str, app_role: str) -> Any:
    from alembic.config import Config

    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise RuntimeError(f"migrations not found next to the package: {MIGRATIONS_DIR}")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url
    config.attributes["app_role"] = check_role_name(app_role)
    return config


def run_migrations(url: str, *, revision: str = "head", app_role: str = DEFAULT_APP_ROLE) -> None:
    """Upgrade the database at `url` (the table owner's connection) to `revision`.

    On PostgreSQL the migrations also grant `app_role` its table privileges when the role exists.
    """
    from alembic import command

    command.upgrade(_alembic_config(url, app_role), revision)


def downgrade_migrations(url: str, *, revision: str = "base") -> None:
    """Downgrade the database at `url` to `revision` (default: drop everything)."""
    from alembic import command

    command.downgrade(_alembic_config(url, DEFAULT_APP_ROLE), revision)


@contextmanager
def temporary_database(admin_url: str, *, prefix: str) -> Iterator[str]:
    """A new, empty PostgreSQL database named `{prefix}_<random>` on the server of `admin_url`
    (a role allowed to create databases), dropped afterwards whoever is still connected; yields
    its URL for that role. For tests and benchmarks."""
    name = f"{prefix}_{secrets.token_hex(5)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {_quote_identifier(name)}")
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(
                    f"DROP DATABASE IF EXISTS {_quote_identifier(name)} WITH (FORCE)"
                )
    finally:
        admin.dispose()


# Why a database operation could not be done, for the client that asked (never the driver's
# message itself: it names the host, port and role). PostgreSQL's SQLSTATE when the server sent
# one; a refused connection carries none, only the server's message, matched here.
_STATE_REASONS = {
    "53300": "the database server has no free connection (its connection limit is reached)",
    "57P01": "the database server is restarting",
    "57P02": "the database server is restarting",
    "57P03": "the database server is starting up or shutting down",
    "40001": "a concurrent change conflicted with this one",
    "40P01": "a concurrent change deadlocked with this one",
    "55P03": "a row it needs is locked by another change",
    "57014": "a statement took too long and was cancelled",
}
_MESSAGE_REASONS = (
    ("too many connections", _STATE_REASONS["53300"]),
    ("too many clients", _STATE_REASONS["53300"]),
    ("connection slots are reserved", _STATE_REASONS["53300"]),
    ("is starting up", _STATE_REASONS["57P03"]),
    ("is shutting down", _STATE_REASONS["57P03"]),
    ("terminating connection", "the database server closed the connection"),
    ("connection refused", "the database server cannot be reached"),
    ("database is locked", "the database is locked by another writer"),
)
UNAVAILABLE = "the database is busy or unreachable"


def unavailable_reason(exc: BaseException) -> str:
    """Why `exc` (a driver's operational error, or SQLAlchemy's wrapping of one) kept the
    database from answering, in words safe to show a client: no host, port or role."""
    orig = getattr(exc, "orig", None) or exc
    state = getattr(orig, "sqlstate", None)
    if isinstance(state, str) and state in _STATE_REASONS:
        return _STATE_REASONS[state]
    message = str(orig).lower()
    for marker, reason in _MESSAGE_REASONS:
        if marker in message:
            return reason
    if isinstance(state, str) and state.startswith("08"):
        return "the connection to the database server failed"
    return UNAVAILABLE


def ping(engine: Engine) -> None:
    """Open a connection and run a trivial statement; raises when the database is unusable."""
    with engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1")


def role_url(url: str, role: str) -> str:
    """`url` connecting as `role` without a password (trust or peer authentication)."""
    return make_url(url).set(username=role, password=None).render_as_string(hide_password=False)


@contextmanager
def _owner_connection(owner_url: str, purpose: str) -> Iterator[Connection]:
    """An autocommit connection to PostgreSQL as the owner at `owner_url`, for role set-up."""
    engine = make_engine(owner_url, pool_size=1)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if conn.dialect.name != "postgresql":
                raise ValueError(f"{purpose} needs PostgreSQL")
            yield conn
    finally:
        engine.dispose()


def ensure_app_role(
    owner_url: str, role: str = DEFAULT_APP_ROLE, *, password: str | None = None
) -> None:
    """Create (if missing) the PostgreSQL login role the application connects as, and grant it
    data privileges on the tables of the database at `owner_url` (now and for later tables).

    The role gets no ownership, no BYPASSRLS and no superuser: row-level security applies to it.
    Refuses an existing role that is a superuser or bypasses RLS. Safe to run concurrently.
    """
    role = check_role_name(role)
    with _owner_connection(owner_url, "ensure_app_role") as conn:
        _create_role(conn, role, password)
        _grant_privileges(conn, role)


def ensure_system_role(owner_url: str, role: str, *, password: str | None = None) -> None:
    """Create (if missing) the PostgreSQL login role DBOS connects as, allowed to connect to the
    database at `owner_url` and nothing else: its privileges on schema `dbos` come with the
    system tables (`system_db.migrate_system_database`); it reads no tenant table. Refuses an
    existing role that is a superuser or bypasses RLS. Safe to run concurrently."""
    role = check_role_name(role)
    with _owner_connection(owner_url, "ensure_system_role") as conn:
        _create_role(conn, role, password)
        database = conn.execute(text("SELECT current_database()")).scalar_one()
        conn.exec_driver_sql(f"GRANT CONNECT ON DATABASE {_quote_identifier(database)} TO {role}")


def _create_role(conn: Connection, role: str, password: str | None) -> None:
    conn.exec_driver_sql(
        "DO $$ BEGIN "
        f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE; "
        "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
    )
    flags = conn.execute(
        text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :r"), {"r": role}
    ).one()
    if flags.rolsuper or flags.rolbypassrls:
        raise RuntimeError(f"role {role} is a superuser or bypasses row-level security")
    if password is not None:
        # DDL takes no bind parameters; standard_conforming_strings (on by default) makes
        # doubling quotes the complete escaping of a literal.
        literal = "'" + password.replace("'", "''") + "'"
        conn.exec_driver_sql(f"ALTER ROLE {role} PASSWORD {literal}")


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _grant_privileges(conn: Connection, role: str) -> None:
    database = conn.execute(text("SELECT current_database()")).scalar_one()
    conn.exec_driver_sql(f"GRANT CONNECT ON DATABASE {_quote_identifier(database)} TO {role}")
    conn.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {role}")
    conn.exec_driver_sql(
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
    )
    conn.exec_driver_sql(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
    # Tables that later migrations create get the same privileges, whether those migrations run
    # as this role or as the database owner.
    creators = (
        conn.execute(
            text(
                "SELECT DISTINCT r FROM (SELECT current_user AS r UNION "
                "SELECT pg_get_userbyid(datdba) FROM pg_database "
                "WHERE datname = current_database()) x"
            )
        )
        .scalars()
        .all()
    )
    for creator in creators:
        who = _quote_identifier(creator)
        conn.exec_driver_sql(
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {who} IN SCHEMA public "
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}"
        )
        conn.exec_driver_sql(
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {who} IN SCHEMA public "
            f"GRANT USAGE, SELECT ON SEQUENCES TO {role}"
        )
    # The migration bookkeeping table is the owner's business only.
    conn.exec_driver_sql(
        "DO $$ BEGIN IF to_regclass('public.alembic_version') IS NOT NULL THEN "
        f"REVOKE ALL ON alembic_version FROM {role}; END IF; END $$"
    )
