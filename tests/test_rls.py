"""PostgreSQL row-level security, exercised through the application's own connection (a role
that does not own the tables and has no BYPASSRLS). Runs in the PostgreSQL pass of the suite."""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches import service as batches
from docflow.batches.service import DocumentSpec
from docflow.db import (
    bind_tenant,
    ensure_app_role,
    make_engine,
    make_session_factory,
    run_migrations,
)
from docflow.events.repository import all_tenant_ids
from docflow.kit.clock import utcnow
from docflow.projects import service as projects
from docflow.review import claims
from docflow.review import service as review
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants
from docflow.trust import service as trust
from docflow.workflows import service as workflows
from support.db_fixtures import (
    APP_ROLE,
    POSTGRES_ADMIN_URL,
    TENANT_TABLES,
    raw_count,
    sample_definition,
)
from support.review_fixtures import reviewable_batch

pytestmark = pytest.mark.postgres_only


def _tenant_with_documents(factory: sessionmaker[Session], count: int) -> TenantContext:
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=tenants.create_tenant(session, name="rls").id)
        tenants.create_api_key(session, tenant.tenant_id, name="k", scopes=["*"])
        project = projects.create_project(session, tenant, name="p")
        workflow = workflows.create_workflow(
            session, tenant, project_id=project.id, definition=sample_definition()
        )
        batches.create_batch(
            session,
            tenant,
            project_id=project.id,
            workflow_id=workflow.id,
            documents=[DocumentSpec(f"{i}.pdf", "application/pdf", 1) for i in range(count)],
            scheduled_for=None,
            upload_deadline=utcnow() + timedelta(hours=1),
            max_documents=10,
            max_document_bytes=10,
        )
    return tenant


@pytest.fixture(scope="module")
def two_tenants(session_factory: sessionmaker[Session]) -> tuple[TenantContext, TenantContext]:
    return _tenant_with_documents(session_factory, 2), _tenant_with_documents(session_factory, 3)


@pytest.fixture
def app_session(session_factory: sessionmaker[Session]) -> Iterator[Session]:
    with session_factory() as session:
        yield session
        session.rollback()


def test_the_app_role_neither_owns_the_tables_nor_bypasses_rls(engine: Engine) -> None:
    with engine.connect() as conn:
        me = conn.execute(
            text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        ).one()
        owned = conn.execute(
            text("SELECT count(*) FROM pg_tables WHERE tableowner = current_user")
        ).scalar_one()
        forced = conn.execute(
            text(
                "SELECT relname FROM pg_class WHERE relrowsecurity AND relforcerowsecurity "
                "AND relkind = 'r'"
            )
        ).scalars()
        assert (me.rolsuper, me.rolbypassrls, owned) == (False, False, 0)
        assert set(TENANT_TABLES) <= set(forced)


# Tables without row-level security, each for a reason given in docs/architecture.md ("Tenant
# isolation"): a new table lands here only with its reason written down.
UNCONFINED_TABLES = {
    "alembic_version",
    "step_attempts",
    "executor_heartbeats",
    "sign_in_throttles",
}


def test_only_the_documented_tables_go_without_row_level_security(engine: Engine) -> None:
    with engine.connect() as conn:
        unconfined = conn.execute(
            text(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relkind = 'r' "
                "AND NOT (c.relrowsecurity AND c.relforcerowsecurity)"
            )
        ).scalars()
        assert set(unconfined) == UNCONFINED_TABLES


def test_raw_select_sees_only_the_bound_tenants_rows(
    app_session: Session, two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    a, b = two_tenants
    bind_tenant(app_session, a.tenant_id)
    rows = app_session.execute(text("SELECT * FROM documents")).mappings().all()
    assert len(rows) == 2 and {r["tenant_id"] for r in rows} == {a.tenant_id}
    bind_tenant(app_session, b.tenant_id)
    rows = app_session.execute(text("SELECT * FROM documents")).mappings().all()
    assert len(rows) == 3 and {r["tenant_id"] for r in rows} == {b.tenant_id}


def test_without_a_tenant_every_tenant_table_is_empty(
    app_session: Session, two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    for table in ("tenants", "users", *TENANT_TABLES):
        assert raw_count(app_session, table) == 0, table


def test_the_tenant_survives_commits(
    app_session: Session, two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    a, _ = two_tenants
    bind_tenant(app_session, a.tenant_id)
    assert raw_count(app_session, "documents") == 2
    app_session.commit()
    assert raw_count(app_session, "documents") == 2
    app_session.rollback()
    assert raw_count(app_session, "batches") == 1


def test_writing_another_tenants_rows_is_refused(
    app_session: Session, two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    a, b = two_tenants
    bind_tenant(app_session, a.tenant_id)
    updated = app_session.execute(
        text("UPDATE documents SET status = 'FAILED' WHERE tenant_id = :b"), {"b": b.tenant_id}
    )
    assert updated.rowcount == 0  # type: ignore[attr-defined]
    deleted = app_session.execute(
        text("DELETE FROM projects WHERE tenant_id = :b"), {"b": b.tenant_id}
    )
    assert deleted.rowcount == 0  # type: ignore[attr-defined]
    with pytest.raises(DBAPIError, match="row-level security"):
        app_session.execute(
            text(
                "INSERT INTO projects (tenant_id, id, name, description, batch_count, "
                "document_count, created_at, updated_at) "
                "VALUES (:b, 'prj_intruder', 'x', '', 0, 0, now(), now())"
            ),
            {"b": b.tenant_id},
        )
    app_session.rollback()
    bind_tenant(app_session, a.tenant_id)
    with pytest.raises(DBAPIError, match="row-level security"):
        app_session.execute(
            text("UPDATE projects SET tenant_id = :b WHERE tenant_id = :a"),
            {"a": a.tenant_id, "b": b.tenant_id},
        )


def test_a_tenant_sees_its_own_directory_row_and_its_own_members_only(
    session_factory: sessionmaker[Session], two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    a, b = two_tenants
    email = f"{secrets.token_hex(4)}@example.com"
    with session_factory.begin() as session:
        user = tenants.create_user(session, email=email, name="Bea")
        tenants.add_member(session, b.tenant_id, user_id=user.id)
    with session_factory() as session:
        bind_tenant(session, a.tenant_id)
        names = session.execute(text("SELECT id FROM tenants")).scalars().all()
        assert names == [a.tenant_id]
        emails = session.execute(text("SELECT email FROM users")).scalars().all()
        assert email not in emails  # b's member, not a's
        renamed = session.execute(
            text("UPDATE tenants SET name = 'taken over' WHERE id = :b"), {"b": b.tenant_id}
        )
        assert renamed.rowcount == 0  # type: ignore[attr-defined]
        members = session.execute(text("SELECT user_id FROM memberships")).scalars().all()
        assert user.id not in members
        for sql in (
            "UPDATE memberships SET role = 'admin' WHERE user_id = :u",
            "UPDATE users SET name = 'taken over' WHERE id = :u",
            "DELETE FROM memberships WHERE user_id = :u",
        ):
            assert session.execute(text(sql), {"u": user.id}).rowcount == 0  # type: ignore[attr-defined]
        bind_tenant(session, b.tenant_id)
        assert session.execute(text("SELECT email FROM users")).scalars().all() == [email]
        role = text("SELECT role FROM memberships WHERE user_id = :u")
        assert session.execute(role, {"u": user.id}).scalars().all() == ["viewer"]
    with session_factory() as unbound:
        # Sign-in and the sweeps cross tenants on purpose, through the minimum.
        assert tenants.find_user_by_email(unbound, email=email).id == user.id
        assert {a.tenant_id, b.tenant_id} <= set(all_tenant_ids(unbound))


def test_cross_tenant_lookups_return_only_the_minimum(
    session_factory: sessionmaker[Session], two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    a, _ = two_tenants
    with session_factory() as bound:
        bind_tenant(bound, a.tenant_id)
        batch_id = bound.execute(text("SELECT id FROM batches")).scalar_one()
    with session_factory() as unbound:
        closed = unbound.execute(text("SELECT id FROM batches WHERE id = :b"), {"b": batch_id})
        assert closed.all() == []  # no tenant bound: the table itself stays closed
        assert batches.batch_tenant(unbound, batch_id=batch_id).tenant_id == a.tenant_id
        prefix_rows = unbound.execute(text("SELECT prefix FROM api_keys")).all()
        assert prefix_rows == []


def test_the_retention_lookup_returns_ids_and_days_only(
    session_factory: sessionmaker[Session],
) -> None:
    with session_factory.begin() as session:
        tenant = TenantContext(tenant_id=tenants.create_tenant(session, name="kept").id)
        kept = projects.create_project(session, tenant, name="kept", retention_days=9)
        projects.create_project(session, tenant, name="forever")
    with session_factory() as unbound:
        closed = unbound.execute(text("SELECT id FROM projects WHERE id = :p"), {"p": kept.id})
        assert closed.all() == []  # the table stays closed without a tenant
        found = projects.retention_projects(unbound, limit=1000)
        assert [
            (r.tenant_id, r.project_id, r.days) for r in found if r.tenant_id == tenant.tenant_id
        ] == [(tenant.tenant_id, kept.id, 9)]
        columns = unbound.execute(text("SELECT * FROM docflow_retention_projects(1000)")).keys()
        assert list(columns) == ["tenant_id", "project_id", "retention_days"]


def test_the_app_role_has_data_privileges_only(engine: Engine) -> None:
    with engine.connect() as conn:

        def can(table: str, privilege: str) -> bool:
            return bool(
                conn.execute(
                    text("SELECT has_table_privilege(current_user, :t, :p)"),
                    {"t": table, "p": privilege},
                ).scalar_one()
            )

        assert all(can("documents", p) for p in ("SELECT", "INSERT", "UPDATE", "DELETE"))
        assert not can("documents", "TRUNCATE")
        assert not can("alembic_version", "SELECT")
        with pytest.raises(DBAPIError, match="permission denied"):
            conn.exec_driver_sql("CREATE TABLE intruder (id int)")


def test_a_non_superuser_owner_works_too(empty_owner_db_url: str) -> None:
    """In production the tables' owner is an ordinary role, subject to FORCEd RLS itself: the
    SECURITY DEFINER lookups must still work, and tables it adds later reach the app role."""
    owner = f"docflow_owner_{secrets.token_hex(4)}"
    admin = create_engine(empty_owner_db_url, isolation_level="AUTOCOMMIT")
    database = make_url(empty_owner_db_url).database
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE ROLE {owner} LOGIN NOSUPERUSER NOBYPASSRLS")
            conn.exec_driver_sql(f'ALTER DATABASE "{database}" OWNER TO {owner}')
            conn.exec_driver_sql(f"ALTER SCHEMA public OWNER TO {owner}")
        ensure_app_role(empty_owner_db_url, APP_ROLE)
        owner_url = make_url(empty_owner_db_url).set(username=owner)
        run_migrations(owner_url.render_as_string(hide_password=False), app_role=APP_ROLE)
        owner_engine = create_engine(owner_url)
        with owner_engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE later_table (id int)")
        owner_engine.dispose()

        app = make_engine(make_url(empty_owner_db_url).set(username=APP_ROLE).render_as_string())
        factory = make_session_factory(app)
        with factory.begin() as session:
            tenant = tenants.create_tenant(session, name="owned")
            _, plaintext = tenants.create_api_key(session, tenant.id, name="k", scopes=["*"])
            member = tenants.invite_user(
                session, tenant.id, email="owned@example.com", role="reviewer"
            )
            _, personal = tenants.create_api_key(
                session, tenant.id, name="p", scopes=["read"], user_id=member.user_id
            )
        with factory() as session:
            assert tenants.authenticate(session, token=plaintext).tenant.tenant_id == tenant.id
            # The key lookup reads the key's membership too (the owner's SELECT policy).
            context = tenants.authenticate(session, token=personal).tenant
            assert (context.user_id, context.scopes) == (member.user_id, ("read",))
            assert session.execute(text("SELECT count(*) FROM later_table")).scalar_one() == 0
        app.dispose()
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'ALTER DATABASE "{database}" OWNER TO postgres')
            conn.exec_driver_sql(f"REASSIGN OWNED BY {owner} TO postgres")
            conn.exec_driver_sql(f"DROP OWNED BY {owner}")
        admin.dispose()
        _drop_role_everywhere(owner)


def _drop_role_everywhere(role: str) -> None:
    # Roles are cluster-wide: connect to the maintenance database, not the one being dropped.
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP ROLE IF EXISTS {role}")
    finally:
        admin.dispose()


def test_ensure_app_role_refuses_roles_that_bypass_rls(owner_db_url: str) -> None:
    with pytest.raises(RuntimeError, match="bypasses row-level security"):
        ensure_app_role(owner_db_url, "postgres")
    with pytest.raises(ValueError, match="invalid role name"):
        ensure_app_role(owner_db_url, "app; DROP TABLE documents")


def test_claims_and_reviews_are_confined_to_their_tenant(
    session_factory: sessionmaker[Session], two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    a, b = two_tenants
    with session_factory.begin() as session:
        batch = reviewable_batch(session, a, review=1)
        document_id = batch.documents[0].id
        claims.claim_document(
            session, a, document_id=document_id, reviewer="r", now=utcnow(), lease_seconds=60
        )
        review.review_document(
            session,
            a,
            LocalStorage(Path(tempfile.gettempdir())),
            document_id=document_id,
            reviewer="r",
            review=review.ReviewInput({"total": "1"}, "approve"),
            now=utcnow(),
            max_result_bytes=1000,
        )
        claims.claim_document(
            session, a, document_id=document_id, reviewer="r", now=utcnow(), lease_seconds=60
        )
    with session_factory() as session:
        bind_tenant(session, a.tenant_id)
        mine = [raw_count(session, t) for t in ("review_claims", "document_reviews")]
        bind_tenant(session, b.tenant_id)
        theirs = [raw_count(session, t) for t in ("review_claims", "document_reviews")]
        assert mine >= [1, 1] and theirs == [0, 0]
        assert raw_count(session, "document_review_fields") == 0
        cleared = session.execute(text("DELETE FROM review_claims"))
        assert cleared.rowcount == 0  # type: ignore[attr-defined]


def test_reviewed_examples_and_estimates_are_confined_to_their_tenant(
    session_factory: sessionmaker[Session], two_tenants: tuple[TenantContext, TenantContext]
) -> None:
    a, b = two_tenants
    storage = LocalStorage(Path(tempfile.gettempdir()))
    with session_factory.begin() as session:
        batch = reviewable_batch(session, a, review=1)
        document_id = batch.documents[0].id
        claims.claim_document(
            session, a, document_id=document_id, reviewer="r", now=utcnow(), lease_seconds=60
        )
        review.review_document(
            session,
            a,
            storage,
            document_id=document_id,
            reviewer="r",
            review=review.ReviewInput({"total": "1"}, "approve"),
            now=utcnow(),
            max_result_bytes=1000,
        )
        trust.learn(
            session, a, storage, document_id=document_id, max_result_bytes=1000, now=utcnow()
        )
    with session_factory() as session:
        bind_tenant(session, a.tenant_id)
        mine = [raw_count(session, t) for t in ("field_evidence", "field_trust")]
        bind_tenant(session, b.tenant_id)
        theirs = [raw_count(session, t) for t in ("field_evidence", "field_trust")]
        assert mine == [1, 2] and theirs == [0, 0]
        for table in ("field_evidence", "field_trust"):
            cleared = session.execute(text(f"DELETE FROM {table}"))
            assert cleared.rowcount == 0  # type: ignore[attr-defined]
