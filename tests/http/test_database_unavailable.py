"""A database that cannot serve a request is a 503 problem whose `detail` says why (never the
server's address), and the command line's error shows that reason: on PostgreSQL through a real
refusal (a database whose connection limit is reached), on SQLite through a held write lock's
error."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from docflow import db
from docflow.client.remote import problem_of
from docflow.config import Settings
from docflow.main import create_app
from docflow.system_db import migrate_system_database
from support.api_fixtures import make_api_tenant, ok
from support.db_fixtures import APP_ROLE
from support.process_fixtures import FreshPostgres, fresh_postgres

__all__ = ["fresh_postgres"]

FULL = "the database server has no free connection"


@pytest.fixture
def full_client(fresh_postgres: FreshPostgres, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        env="test",
        home=tmp_path,
        database_url=fresh_postgres.app_url,
        migration_database_url=fresh_postgres.owner_url,
        storage_url=f"file://{tmp_path / 'files'}",
    )
    migrate_system_database(settings, app_role=APP_ROLE)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.mark.postgres_only
def test_a_full_server_is_a_503_that_says_so_and_the_cli_shows_it(
    full_client: TestClient, fresh_postgres: FreshPostgres
) -> None:
    app = full_client.app
    tenant = make_api_tenant(app.state.session_factory, "Full")  # type: ignore[attr-defined]
    ok(full_client.get("/v1/batches", headers=tenant.headers), 200)
    name = make_url(fresh_postgres.owner_url).database
    fresh_postgres.execute(f'ALTER DATABASE "{name}" CONNECTION LIMIT 0')
    try:
        app.state.engine.dispose()  # type: ignore[attr-defined]  # the next request connects anew
        response = full_client.get("/v1/batches", headers=tenant.headers)
    finally:
        fresh_postgres.execute(f'ALTER DATABASE "{name}" CONNECTION LIMIT -1')
    assert response.status_code == 503, response.text
    problem = response.json()
    assert problem["code"] == "database_unavailable"
    assert FULL in problem["detail"], problem
    assert "127.0.0.1" not in problem["detail"] and APP_ROLE not in problem["detail"]
    message = problem_of(response).message()
    assert FULL in message and "database_unavailable" in message, message


def test_a_locked_sqlite_file_is_named_as_the_reason() -> None:
    locked = sqlite3.OperationalError("database is locked")
    assert db.unavailable_reason(locked) == "the database is locked by another writer"
    assert db.unavailable_reason(RuntimeError("x")) == db.UNAVAILABLE
