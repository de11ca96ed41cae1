"""The pool settings bound each engine a process makes, and name its connections."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from sqlalchemy import Engine, text

from docflow.config import Settings
from docflow.runtime import launch
from support.db_fixtures import on_postgres


def _named(owner: Engine, name: str) -> int:
    with owner.connect() as conn:
        query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :n")
        return int(conn.execute(query, {"n": name}).scalar_one())


@pytest.mark.postgres_only
def test_the_application_engine_keeps_its_caps_and_name(db_url: str, owner_engine: Engine) -> None:
    settings = Settings(database_url=db_url, db_pool_size=2, db_max_overflow=1)
    engine = launch.app_engine(settings, "worker")
    try:
        assert (engine.pool.size(), engine.pool._max_overflow) == (2, 1)  # type: ignore[attr-defined]
        with ExitStack() as held:
            for _ in range(3):
                held.enter_context(engine.connect())
            assert _named(owner_engine, "docflow-worker") == 3
        assert _named(owner_engine, "docflow-worker") == 2  # the overflow one is closed
    finally:
        engine.dispose()


def test_dbos_and_client_pools_follow_the_settings(db_url: str) -> None:
    settings = Settings(database_url=db_url, system_db_pool_size=3, client_db_pool_size=1)
    config = launch.dbos_config(settings, executor_id="pools", process="serve")
    clients = launch.client_engine(settings, "serve")
    if not on_postgres():
        assert clients is None and "db_engine_kwargs" not in config
        return
    assert clients is not None
    try:
        assert (clients.pool.size(), clients.pool._max_overflow) == (1, 0)  # type: ignore[attr-defined]
    finally:
        clients.dispose()
    assert config["sys_db_pool_size"] == 3
    kwargs = config["db_engine_kwargs"] or {}
    assert (kwargs["pool_size"], kwargs["max_overflow"]) == (3, 0)
    assert kwargs["connect_args"]["application_name"] == "docflow-serve-dbos"
