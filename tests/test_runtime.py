"""The DBOS configuration docflow derives from its settings, on each kind of database."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from dbos._error import DBOSException
from sqlalchemy import Engine

from docflow.config import Settings
from docflow.runtime import context, launch
from docflow.system_db import system_database_url


def test_sqlite_keeps_the_durable_state_in_the_application_file(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, worker_concurrency=3, max_concurrency=7)
    assert settings.resolved_system_database_url() == settings.resolved_database_url()
    config = launch.dbos_config(settings, executor_id="w-1")
    assert config["system_database_url"] == f"sqlite:///{tmp_path / 'docflow.db'}"
    assert (config["name"], config["executor_id"]) == ("docflow", "w-1")
    assert config["application_version"] == context.APP_VERSION
    assert config["run_migrations"] is True  # SQLite: DBOS migrates the file at launch
    engine = config["system_database_engine"]
    assert isinstance(engine, Engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    engine.dispose()
    assert context.worker_concurrency(settings) == 3


def test_postgresql_uses_schema_dbos_migrated_out_of_band() -> None:
    settings = Settings(
        database_url="postgresql://docflow_app@db.internal:5432/docflow",
        migration_database_url="postgresql+psycopg://owner:pw@db.internal:5432/docflow",
    )
    config = launch.dbos_config(settings, executor_id="w-2")
    # DBOS connects as its own role, never as the application's (RLS-bound) one.
    assert config["system_database_url"] == "postgresql://docflow_system@db.internal:5432/docflow"
    assert config["dbos_system_schema"] == "dbos"
    assert config["run_migrations"] is False  # the owner role runs DBOS.migrate
    assert config["serializer"].name() == "docflow_json"
    assert "system_database_engine" not in config
    owner = system_database_url(settings, owner=True)
    assert owner == "postgresql://owner:pw@db.internal:5432/docflow"
    explicit = settings.model_copy(
        update={"system_database_url": "postgresql://dbos_rt:s3cret@db.internal:5432/docflow"}
    )
    assert system_database_url(explicit) == explicit.system_database_url
    assert system_database_url(explicit, owner=True) == owner


def test_concurrency_defaults_follow_the_cpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context.os, "cpu_count", lambda: 2)
    assert context.worker_concurrency(Settings(worker_concurrency=0)) == 8
    assert context.worker_concurrency(Settings(worker_concurrency=0, max_concurrency=5)) == 5
    assert context.ocr_concurrency(Settings(ocr_concurrency=0)) == 2
    assert context.ocr_concurrency(Settings(ocr_concurrency=3)) == 3


def test_one_tenant_never_holds_every_slot_of_a_worker() -> None:
    assert [context.tenant_slots(n) for n in (1, 2, 4, 8, 16)] == [1, 1, 3, 6, 12]


def _dbos_record(message: str, error: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(error), error, None) if error is not None else None
    return logging.LogRecord("dbos", logging.ERROR, "x.py", 1, message, None, exc_info)


def test_work_refused_after_the_shutdown_is_logged_as_interrupted_not_as_an_error() -> None:
    interrupted = launch._Interrupted()
    refused = DBOSException("System database accessed before DBOS was launched")
    try:
        try:
            raise refused
        except DBOSException as first:
            raise RuntimeError("while failing the document") from first
    except RuntimeError as chained:
        raised_while_handling = chained
    # A running workflow's next checkpoint, and a workflow the queue had just claimed.
    assert not interrupted.filter(_dbos_record("Exception in background workflow", refused))
    assert not interrupted.filter(_dbos_record("Exception", raised_while_handling))
    claimed = (
        "Error executing workflow doc:d1: DBOS Error: Executor accessed before DBOS was launched"
    )
    assert not interrupted.filter(_dbos_record(claimed))
    # Every other error is left as DBOS logs it.
    assert interrupted.filter(_dbos_record("Exception", DBOSException("Workflow not found")))
    assert interrupted.filter(_dbos_record("Error executing workflow doc:d2: connection refused"))
