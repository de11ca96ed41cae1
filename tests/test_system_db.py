"""The durable state DBOS keeps: JSON only, never unpickled, and out of the application role's
reach on PostgreSQL (it may enqueue a workflow in its own transaction, nothing more)."""

from __future__ import annotations

import base64
import os
import pickle
import time
from pathlib import Path
from typing import Any

import pytest
from dbos._serialization import deserialize_value
from sqlalchemy import create_engine, text
from sqlalchemy.exc import ProgrammingError

from docflow import db
from docflow.batches import triggers
from docflow.batches.models import Batch
from docflow.runtime.context import services
from docflow.system_db import SERIALIZER, UnsafeSerialization, migrate_system_database
from support.db_fixtures import APP_ROLE, on_postgres
from support.dbos_fixtures import DbosEnv, dbos_env  # noqa: F401


class _Planted:
    """Unpickling this creates `path`: proof that a pickle was loaded."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.path),))


def _pickle_of(value: Any) -> str:
    return base64.b64encode(pickle.dumps(value)).decode()


def _tables() -> str:
    return "dbos." if on_postgres() else ""


def _owner_engine(env: DbosEnv) -> Any:
    return db.make_engine(env.settings.resolved_migration_database_url(), pool_size=1)


def test_a_workflow_whose_input_is_a_pickle_ends_in_error_without_being_unpickled(
    dbos_env: DbosEnv,  # noqa: F811
    tmp_path: Path,
) -> None:
    planted = tmp_path / "unpickled"
    workflow_id = "bat_forged_pickle"
    owner = _owner_engine(dbos_env)
    try:
        # As the owner, who may write anything: a batch execution whose stored input is a pickle.
        with db.make_write_session_factory(owner)() as session:
            client = services().client
            batch = Batch(tenant_id="ten_x", id=workflow_id)  # only its ids are read
            triggers.enqueue_execution(session, client, batch)
            session.execute(
                text(
                    f"UPDATE {_tables()}workflow_status SET serialization = 'py_pickle' "
                    "WHERE workflow_uuid = :w"
                ),
                {"w": workflow_id},
            )
            session.execute(
                text(f"UPDATE {_tables()}workflow_input SET inputs = :i WHERE workflow_uuid = :w"),
                {"w": workflow_id, "i": _pickle_of({"args": (_Planted(planted),), "kwargs": {}})},
            )
            session.commit()
        status, error = _wait_for_outcome(owner, workflow_id)
    finally:
        owner.dispose()
    assert not planted.exists()
    assert status == "ERROR"
    assert "UnsafeSerialization" in error and "pickle" in error


def _wait_for_outcome(owner: Any, workflow_id: str) -> tuple[str, str]:
    query = text(
        f"SELECT s.status, o.error FROM {_tables()}workflow_status s "
        f"LEFT JOIN {_tables()}workflow_output o ON o.workflow_uuid = s.workflow_uuid "
        "WHERE s.workflow_uuid = :w"
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with owner.connect() as conn:
            status, error = conn.execute(query, {"w": workflow_id}).one()
        if status not in ("ENQUEUED", "PENDING"):
            return status, error or ""
        time.sleep(0.1)
    raise AssertionError(f"{workflow_id} was never dequeued")


def test_a_step_output_marked_as_a_pickle_is_refused(
    dbos_env: DbosEnv,  # noqa: F811
    tmp_path: Path,
) -> None:
    planted = tmp_path / "unpickled"
    with pytest.raises(UnsafeSerialization):
        deserialize_value(_pickle_of(_Planted(planted)), "py_pickle", SERIALIZER)
    assert not planted.exists()


_REFUSED_TO_THE_APP_ROLE = [
    "SELECT output, error FROM dbos.operation_outputs",
    "SELECT inputs FROM dbos.workflow_input",
    "SELECT output, error FROM dbos.workflow_output",
    "SELECT output, error, inputs FROM dbos.workflow_status",
    "SELECT attributes, authenticated_user FROM dbos.workflow_status",
    "INSERT INTO dbos.operation_outputs (workflow_uuid, function_id, function_name, output) "
    "VALUES ('w', 1, 'document.persist', 'x')",
    "UPDATE dbos.operation_outputs SET output = 'x'",
    "UPDATE dbos.workflow_status SET status = 'SUCCESS', executor_id = 'x'",
    "UPDATE dbos.workflow_input SET inputs = 'x'",
    "DELETE FROM dbos.workflow_status",
]


@pytest.mark.postgres_only
@pytest.mark.parametrize("statement", _REFUSED_TO_THE_APP_ROLE)
def test_the_application_role_cannot_read_or_change_durable_state(
    dbos_env: DbosEnv,  # noqa: F811
    statement: str,
) -> None:
    app = create_engine(db.role_url(dbos_env.settings.resolved_database_url(), APP_ROLE))
    try:
        with app.connect() as conn, pytest.raises(ProgrammingError, match="permission denied"):
            conn.execute(text(statement))
    finally:
        app.dispose()


@pytest.mark.postgres_only
def test_dbos_connects_as_its_own_role_which_reads_no_tenant_table(
    dbos_env: DbosEnv,  # noqa: F811
) -> None:
    system_url = dbos_env.settings.resolved_system_database_url()
    assert "docflow_system@" in system_url
    system = db.make_engine(system_url, pool_size=1)
    try:
        with system.connect() as conn:
            conn.execute(text("SELECT count(*) FROM dbos.operation_outputs")).scalar_one()
        with system.connect() as conn, pytest.raises(ProgrammingError, match="permission denied"):
            conn.execute(text("SELECT count(*) FROM documents"))
    finally:
        system.dispose()


@pytest.mark.postgres_only
def test_dbos_may_not_connect_as_the_application_role(
    dbos_env: DbosEnv,  # noqa: F811
) -> None:
    settings = dbos_env.settings
    same = settings.model_copy(update={"system_database_url": settings.resolved_database_url()})
    with pytest.raises(ValueError, match="application role"):
        migrate_system_database(same, app_role=APP_ROLE)


@pytest.mark.postgres_only
def test_ensure_system_role_refuses_roles_that_bypass_rls(
    dbos_env: DbosEnv,  # noqa: F811
) -> None:
    owner_url = dbos_env.settings.resolved_migration_database_url()
    with pytest.raises(RuntimeError, match="bypasses row-level security"):
        db.ensure_system_role(owner_url, "postgres")
    with pytest.raises(ValueError, match="invalid role name"):
        db.ensure_system_role(owner_url, "dbos; DROP SCHEMA dbos")
