"""The Alembic migrations on the database kind under test: up, down, up again; the migrated
schema matches the models exactly; the partial indexes serve their access patterns."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

from docflow import db
from docflow.search import models as search_models
from docflow.system_db import dbos_table_names
from support.db_fixtures import APP_ROLE, on_postgres


def _tables(url: str) -> set[str]:
    engine = db.make_engine(url, pool_size=1)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"} - search_models.UNMAPPED
    finally:
        engine.dispose()


def _not_dbos(name: str | None, type_: str, parent_names: dict[str, str | None]) -> bool:
    # On SQLite DBOS's tables share the application's file (on PostgreSQL they live in their
    # own schema, which the comparison does not look at): they are not the application's schema.
    # The search's full-text index is the engine's own (an FTS5 table; a generated tsvector
    # column and its GIN index), created by its migrations outside the models.
    table = name if type_ == "table" else parent_names.get("table_name")
    return table not in dbos_table_names() and name not in search_models.UNMAPPED


def _schema_diff(url: str) -> list[object]:
    engine = db.make_engine(url, pool_size=1)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"include_name": _not_dbos})
            return list(compare_metadata(context, db.load_models()))
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(empty_owner_db_url: str) -> None:
    expected = set(db.load_models().tables)
    db.run_migrations(empty_owner_db_url, app_role=APP_ROLE)
    assert _tables(empty_owner_db_url) == expected
    db.run_migrations(empty_owner_db_url, app_role=APP_ROLE)  # already at head: a no-op
    db.downgrade_migrations(empty_owner_db_url)
    assert _tables(empty_owner_db_url) == set()
    db.run_migrations(empty_owner_db_url, app_role=APP_ROLE)
    assert _tables(empty_owner_db_url) == expected


def test_migrated_schema_matches_the_models(owner_db_url: str) -> None:
    assert _schema_diff(owner_db_url) == []


def _plan(engine: Engine, sql: str, params: dict[str, str]) -> str:
    with engine.connect() as conn:
        if on_postgres():
            conn.exec_driver_sql("SET enable_seqscan = off")
            rows = conn.execute(text(f"EXPLAIN {sql}"), params).scalars().all()
        else:
            rows = [r[-1] for r in conn.execute(text(f"EXPLAIN QUERY PLAN {sql}"), params)]
        return "\n".join(str(r) for r in rows)


def test_status_queries_use_the_partial_indexes(owner_engine: Engine) -> None:
    in_set = "status IN ('PENDING_UPLOAD', 'UPLOADED', 'PROCESSING', 'FAILED', 'REVIEW_REQUIRED')"
    by_batch = (
        "SELECT id FROM documents WHERE tenant_id = :t AND batch_id = :b "
        f"AND status = 'FAILED' AND {in_set} ORDER BY id"
    )
    review = (
        "SELECT id FROM documents WHERE tenant_id = :t AND status = 'REVIEW_REQUIRED' "
        f"AND {in_set} ORDER BY updated_at, id"
    )
    params = {"t": "ten_x", "b": "bat_x"}
    assert "ix_documents_batch_status" in _plan(owner_engine, by_batch, params)
    assert "ix_documents_tenant_status" in _plan(owner_engine, review, {"t": "ten_x"})
    batch_by_id = "SELECT tenant_id FROM batches WHERE id = :b"
    assert "ux_batches_id" in _plan(owner_engine, batch_by_id, {"b": "bat_x"})


def test_users_migration_maps_the_earlier_roles(empty_owner_db_url: str) -> None:
    before = "0007_users-1"
    db.run_migrations(empty_owner_db_url, revision=before, app_role=APP_ROLE)
    engine = db.make_engine(empty_owner_db_url, pool_size=1)
    roles = text("SELECT user_id, role FROM memberships ORDER BY user_id")
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO tenants VALUES ('ten_m', 'm', 'free', :now)"), _NOW)
            for user, role in (("usr_1", "owner"), ("usr_2", "member"), ("usr_3", "viewer")):
                conn.execute(
                    text("INSERT INTO users VALUES (:u, :e, '', :now)"),
                    {"u": user, "e": f"{user}@example.com", **_NOW},
                )
                conn.execute(
                    text("INSERT INTO memberships VALUES ('ten_m', :u, :r)"),
                    {"u": user, "r": role},
                )
        db.run_migrations(empty_owner_db_url, revision="0007_users", app_role=APP_ROLE)
        with engine.connect() as conn:
            assert conn.execute(roles).all() == [
                ("usr_1", "admin"),
                ("usr_2", "reviewer"),
                ("usr_3", "viewer"),
            ]
        db.downgrade_migrations(empty_owner_db_url, revision=before)
        with engine.connect() as conn:
            assert [r.role for r in conn.execute(roles)] == ["admin", "member", "viewer"]
    finally:
        engine.dispose()


_NOW = {"now": datetime(2026, 12, 1, tzinfo=UTC)}
BEFORE_REVIEW = (
    "INSERT INTO tenants VALUES ('ten_m', 't', 'free', CURRENT_TIMESTAMP)",
    "INSERT INTO projects VALUES ('ten_m', 'prj_m', 'p', '', 1, 1, CURRENT_TIMESTAMP, "
    "CURRENT_TIMESTAMP)",
    "INSERT INTO extraction_workflows VALUES ('ten_m', 'wfl_m', 'prj_m', 'w', 1, "
    "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
    "INSERT INTO extraction_workflow_versions VALUES ('ten_m', 'wfl_m', 1, '{}', 'h', "
    "CURRENT_TIMESTAMP)",
    "INSERT INTO batches VALUES ('ten_m', 'bat_m', 'prj_m', 'wfl_m', 1, 'REVIEW_REQUIRED', 1, 1, "
    "0, 1, 0, NULL, CURRENT_TIMESTAMP, NULL, NULL, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 1)",
    "INSERT INTO documents VALUES ('ten_m', 'doc_m', 'bat_m', 'f.pdf', 'application/pdf', 1, 1, "
    "NULL, NULL, NULL, 'REVIEW_REQUIRED', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, "
    "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
)


def test_the_review_migration_gives_existing_documents_their_project_and_workflow(
    empty_owner_db_url: str,
) -> None:
    db.run_migrations(empty_owner_db_url, revision="0006_directory_rls", app_role=APP_ROLE)
    engine = db.make_engine(empty_owner_db_url, pool_size=1)
    try:
        with engine.begin() as conn:
            for statement in BEFORE_REVIEW:
                conn.execute(text(statement))
        db.run_migrations(empty_owner_db_url, app_role=APP_ROLE)
        with engine.connect() as conn:
            row = conn.execute(
                text("SELECT project_id, workflow_id, reviewed_at FROM documents")
            ).one()
    finally:
        engine.dispose()
    assert tuple(row) == ("prj_m", "wfl_m", None)


@pytest.mark.postgres_only
def test_the_projections_migration_stores_each_entrys_vector_under_the_gin_index(
    empty_owner_db_url: str,
) -> None:
    db.run_migrations(empty_owner_db_url, revision="0021_sources", app_role=APP_ROLE)
    engine = db.make_engine(empty_owner_db_url, pool_size=1)
    entry = (
        "INSERT INTO search_entries VALUES ('ten_s', 'doc_s', NULL, 'bat_s', NULL, 'a.pdf', "
        "'SUCCEEDED', NULL, 1, '{}', '{}', '{}', 'overdue invoice from acme', CURRENT_TIMESTAMP)"
    )
    match = (
        "SELECT document_id FROM search_entries WHERE body_vector @@ plainto_tsquery('simple', :q)"
    )
    try:
        with engine.begin() as conn:
            conn.execute(text(entry))
        db.run_migrations(empty_owner_db_url, app_role=APP_ROLE)
        with engine.connect() as conn:
            assert conn.execute(text(match), {"q": "acme invoice"}).scalars().all() == ["doc_s"]
            assert conn.execute(text(match), {"q": "steel"}).scalars().all() == []
        assert "ix_search_entries_body" in _plan(engine, match, {"q": "acme"})
        db.downgrade_migrations(empty_owner_db_url, revision="0021_sources")
        with engine.connect() as conn:
            columns = {c["name"] for c in inspect(conn).get_columns("search_entries")}
            assert "body_vector" not in columns
            indexes = conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_search_entries_body'")
            ).scalar_one()
            assert "to_tsvector" in indexes
    finally:
        engine.dispose()
