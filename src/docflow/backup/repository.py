"""The database side of a backup: a consistent snapshot of the whole database, and the stored
objects it references, read in that same snapshot (every tenant's: this is the operator's
connection, the table owner, which bypasses row-level security)."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, select
from sqlalchemy.engine import Connection, make_url

from docflow import db
from docflow.documents.keys import words_key
from docflow.documents.models import Document
from docflow.tenancy import cross_tenant

# A dump or restore of a large database takes minutes; one that hangs longer than this is
# stopped (the backup then fails, whole, rather than hold the database's snapshot forever).
PG_TOOL_TIMEOUT_SECONDS = 6 * 3600


def libpq_url(url: str) -> str:
    """`url` as pg_dump and pg_restore take it (`postgresql://…`, no SQLAlchemy driver)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@cross_tenant("a backup copies every tenant's stored objects")
def referenced_keys(conn: Connection) -> list[str]:
    """Every storage key a document row holds (its file, its stored result), and each landed
    document's words key (`is_words_key`: one not kept is no loss), sorted."""
    files = conn.execute(select(Document.storage_key).where(Document.storage_key.is_not(None)))
    results = conn.execute(select(Document.result_ref).where(Document.result_ref.is_not(None)))
    landed = conn.execute(
        select(Document.tenant_id, Document.id).where(Document.storage_key.is_not(None))
    )
    found = {str(key) for (key,) in files} | {str(key) for (key,) in results}
    found |= {words_key(str(tenant), str(document)) for tenant, document in landed}
    return sorted(found)


def sqlite_snapshot(database: Path, target: Path) -> list[str]:
    """Copy the SQLite database at `database` to `target` with SQLite's online backup (a
    consistent copy while the service writes), and return the keys the copy references."""
    source = sqlite3.connect(database, timeout=30)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
        # A file of its own: no write-ahead log beside it to lose when it is copied alone.
        copy.execute("PRAGMA journal_mode=DELETE")
    finally:
        copy.close()
        source.close()
    engine = create_engine(f"sqlite:///{target}")
    try:
        with engine.connect() as conn:
            return referenced_keys(conn)
    finally:
        engine.dispose()


@cross_tenant("a backup is one snapshot of every tenant's rows")
@contextmanager
def postgres_snapshot(owner_url: str) -> Iterator[tuple[str, list[str]]]:
    """Open a REPEATABLE READ transaction, export its snapshot and read the referenced keys in
    it; yield (snapshot id, keys), for `pg_dump --snapshot` to dump exactly what was read."""
    engine = db.make_engine(owner_url, pool_size=1)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                conn.exec_driver_sql("SET LOCAL row_security = off")
                snapshot = conn.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one()
                yield str(snapshot), referenced_keys(conn)
    finally:
        engine.dispose()


def pg_dump(owner_url: str, snapshot: str, target: Path) -> None:
    """Dump the whole database (both schemas: docflow's and DBOS's) in the custom format."""
    _run(
        [
            "pg_dump",
            "--format=custom",
            "--no-owner",
            f"--snapshot={snapshot}",
            f"--file={target}",
            f"--dbname={libpq_url(owner_url)}",
        ]
    )


def pg_restore(owner_url: str, dump: Path) -> None:
    """Restore `dump` into the (empty) database of `owner_url`, in one transaction."""
    _run(
        [
            "pg_restore",
            "--no-owner",
            "--exit-on-error",
            "--single-transaction",
            f"--dbname={libpq_url(owner_url)}",
            str(dump),
        ]
    )


def pg_list(dump: Path) -> None:
    """Read `dump`'s table of contents (fails on a damaged or foreign file)."""
    _run(["pg_restore", "--list", str(dump)])


@cross_tenant("a restore goes only into a database with no tenant's rows")
def postgres_is_empty(owner_url: str) -> bool:
    """Whether the database holds no table of docflow's (nor DBOS's schema)."""
    engine = db.make_engine(owner_url, pool_size=1)
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema IN ('public', 'dbos')"
            ).scalar_one()
            return int(found) == 0
    finally:
        engine.dispose()


def sqlite_integrity(path: Path) -> str:
    """SQLite's integrity check of the file at `path` ("ok" when sound)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PG_TOOL_TIMEOUT_SECONDS, check=False
        )
    except FileNotFoundError as exc:
        raise RuntimeError(
            f"{command[0]} is not installed (Debian: apt-get install postgresql-client)"
        ) from exc
    if done.returncode != 0:
        # Its own words: it names the object or connection at fault, never row data.
        raise RuntimeError(f"{command[0]} failed: {done.stderr.strip()[-2000:]}")
