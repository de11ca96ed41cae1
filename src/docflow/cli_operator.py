"""What the operator's commands of `docflow` share: the configured database, a DBOS client when a
command needs one, the tenant a command names, and how a command fails.

The operator works with the database access of the configuration; everything a command reads or
changes is scoped to the tenant it names (`--tenant`), with every scope. A domain error raised
while the operator's access is open ends the command: its message on stderr as the remote
commands print the API's problems (`<detail> (<code>, field <path>)`), exit status 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from dbos import DBOSClient
from rich.console import Console
from rich.markup import escape
from sqlalchemy import Engine, inspect, make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from docflow import db
from docflow.config import Settings
from docflow.encryption.service import open_file_storage
from docflow.errors import DomainError, describe
from docflow.runtime.launch import open_client
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext, operator

# The heading of the operator's commands in `--help`, where a sub-app also has remote ones.
OPERATOR_PANEL = "Operator: on the local database (DOCFLOW_DATABASE_URL, --tenant)"


def fail(message: str, *, code: int = 1) -> typer.Exit:
    """Print `message` as an error on stderr; the exit to raise, with status `code`."""
    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def fail_with(error: DomainError, *, code: int = 1) -> typer.Exit:
    """`fail` with a domain error, printed as the remote commands print the API's problems:
    `<detail> (<code>, field <path>)`."""
    return fail(describe(error.detail, code=error.code, field=error.field), code=code)


def prepare_home(settings: Settings) -> None:
    """On SQLite, create the folder the database file lives in."""
    if settings.resolved_database_url().startswith("sqlite"):
        settings.home.mkdir(parents=True, exist_ok=True)


class Operator:
    """One command's access to the database and to DBOS (see `open_operator`)."""

    def __init__(self, settings: Settings, engine: Engine) -> None:
        self.settings = settings
        self.engine = engine
        self._factory = db.make_write_session_factory(engine)
        self._client: DBOSClient | None = None
        self._storage: Storage | None = None

    @contextmanager
    def transaction(self, tenant_id: str | None = None) -> Iterator[Session]:
        """One transaction, bound to `tenant_id` if given: committed when the block ends, rolled
        back on any error. A row the database refuses (most often: `tenant_id` is no tenant)
        ends the command."""
        try:
            with self._factory() as session, session.begin():
                if tenant_id is not None:
                    db.bind_tenant(session, tenant_id)
                yield session
        except IntegrityError as exc:
            # Foreign keys refuse a tenant id that does not exist: the usual cause.
            raise fail(f"refused by the database; is {tenant_id} a tenant?") from exc

    def tenant(self, tenant_id: str) -> TenantContext:
        """The tenant the command names, as the operator acting for it (every scope)."""
        return TenantContext(tenant_id=operator(tenant_id), scopes=("*",))

    def storage(self) -> Storage:
        """The installation's file storage (sealed per tenant when encryption is on), opened
        on first use."""
        if self._storage is None:
            self._storage = open_file_storage(self.settings, self.engine)
        return self._storage

    def client(self) -> DBOSClient:
        """A DBOS client on the system database, opened on first use."""
        if self._client is None:
            self._client = open_client(self.settings)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.destroy()
            self._client = None


@contextmanager
def open_operator(settings: Settings | None = None) -> Iterator[Operator]:
    """The operator's access for one command (on `settings`, default: the environment's),
    released when the block ends; a domain error raised in the block ends the command."""
    settings = settings if settings is not None else Settings()
    prepare_home(settings)
    engine = db.make_engine(settings.resolved_database_url(), application_name="docflow-cli")
    operator = Operator(settings, engine)
    try:
        yield operator
    except DomainError as exc:
        raise fail_with(exc) from exc
    except (OperationalError, ProgrammingError) as exc:
        # A database never migrated (often: a command run outside the folder of DOCFLOW_HOME)
        # or one that cannot be reached says so, rather than ending in a traceback.
        shown = make_url(settings.resolved_database_url()).render_as_string(hide_password=True)
        if not _reachable(engine):
            raise fail(f"cannot connect to the database {shown}") from exc
        if not _migrated(engine):
            raise fail(
                f"the database {shown} has no docflow tables: run `docflow migrate` first, or "
                "point DOCFLOW_DATABASE_URL (or DOCFLOW_HOME) at the database in use"
            ) from exc
        raise
    finally:
        operator.close()
        engine.dispose()


def _reachable(engine: Engine) -> bool:
    try:
        with engine.connect():
            return True
    except DBAPIError:
        return False


def _migrated(engine: Engine) -> bool:
    """Whether the schema is there (the table migrations keep their revision in)."""
    try:
        return inspect(engine).has_table("alembic_version")
    except DBAPIError:
        return False
