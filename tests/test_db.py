"""Engine set-up, UTC datetimes, tenant binding and the optimistic update loop."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError, StatementError
from sqlalchemy.orm import Session

from docflow import db
from docflow.errors import Conflict
from docflow.projects import service as projects
from docflow.tenancy import TenantContext, TenantRepository, cross_tenant, until_set
from support.db_fixtures import on_postgres


def test_postgres_urls_use_psycopg_3() -> None:
    engine = db.make_engine("postgresql://u@127.0.0.1:1/x")
    try:
        assert engine.dialect.driver == "psycopg"
    finally:
        engine.dispose()


def test_engine_setup(engine: Engine) -> None:
    if on_postgres():
        assert engine.dialect.driver == "psycopg" and engine.pool.size() == 5  # type: ignore[attr-defined]
        return
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == db.SQLITE_BUSY_TIMEOUT_MS


def test_datetimes_come_back_aware_in_utc(session: Session, tenant_a: TenantContext) -> None:
    project = projects.create_project(session, tenant_a, name="t")
    plus_two = datetime(2026, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    project.updated_at = plus_two
    session.flush()
    session.expire(project)
    assert project.updated_at == plus_two and project.updated_at.tzinfo == UTC
    project.updated_at = datetime(2026, 5, 1, 12, 0)  # naive: refused, never guessed
    with pytest.raises(StatementError, match="naive"):
        session.flush()


def test_foreign_keys_are_enforced(session: Session, tenant_a: TenantContext) -> None:
    db.bind_tenant(session, tenant_a.tenant_id)
    with pytest.raises(IntegrityError, match=r"(?i)foreign key"):
        session.execute(
            text(
                "INSERT INTO extraction_workflows (tenant_id, id, project_id, name, "
                "current_version, created_at, updated_at) VALUES "
                "(:t, 'wfl_x', 'prj_missing', 'w', 1, :now, :now)"
            ),
            {"t": tenant_a.tenant_id, "now": datetime.now(UTC)},
        )


def test_bind_tenant_records_and_switches(session: Session) -> None:
    assert db.bound_tenant(session) is None
    db.bind_tenant(session, "ten_a")
    assert db.bound_tenant(session) == "ten_a"
    TenantRepository(session, "ten_b")
    assert db.bound_tenant(session) == "ten_b"
    if on_postgres():
        setting = session.execute(text("SELECT current_setting('app.tenant_id', true)"))
        assert setting.scalar_one() == "ten_b"
    with pytest.raises(ValueError):
        db.bind_tenant(session, "")


def test_tenant_repositories_refuse_directory_models(session: Session) -> None:
    from docflow.tenants.models import Tenant

    with pytest.raises(TypeError):
        TenantRepository(session, "ten_a").base(Tenant)


def test_cross_tenant_needs_a_reason() -> None:
    with pytest.raises(ValueError):
        cross_tenant("  ")


def test_until_set_tries_again_while_the_row_changes_and_then_gives_up() -> None:
    """The optimistic update loop: None is a lost race (try again), anything else (False
    included) is the answer; a row that never stops changing is a Conflict."""
    answers = iter([None, None, False])
    assert until_set(lambda: next(answers), conflict="busy") is False
    calls: list[int] = []

    def always_lost() -> bool | None:
        calls.append(1)
        return None

    with pytest.raises(Conflict, match="busy"):
        until_set(always_lost, conflict="busy", attempts=5)
    assert len(calls) == 5
