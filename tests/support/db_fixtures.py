"""Database fixtures: engines, migrated schemas, sessions, tenants.

DOCFLOW_TEST_DATABASE picks the engine: `sqlite` (default) or `postgresql`. On PostgreSQL a fresh
database `docflow_test_<random>` is created for the test session, migrated as the table owner
(`postgres`), and the application role is ensured; `db_url`/`engine` connect AS THE APPLICATION
ROLE, so row-level security is really in force. The database is dropped at the end. On SQLite the
database is a fresh file. The schema always comes from the migrations.

`session` runs each test inside one outer transaction that is rolled back afterwards (service
code only flushes; a `commit()` in the test releases a SAVEPOINT), so tests stay independent and
fast. Code that needs committed data across connections uses `session_factory` and unique names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.batches import service as batches_service
from docflow.batches.models import Batch
from docflow.batches.service import DocumentSpec
from docflow.config import DEFAULT_SYSTEM_ROLE
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.kit.clock import utcnow
from docflow.projects import service as projects_service
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants_service
from docflow.workflows import service as workflows_service

TEST_DATABASE = os.environ.get("DOCFLOW_TEST_DATABASE", "sqlite").lower()
POSTGRES_ADMIN_URL = os.environ.get(
    "DOCFLOW_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
APP_ROLE = db.DEFAULT_APP_ROLE
SYSTEM_ROLE = DEFAULT_SYSTEM_ROLE

if TEST_DATABASE not in ("sqlite", "postgresql"):
    raise RuntimeError(f"DOCFLOW_TEST_DATABASE must be sqlite or postgresql, not {TEST_DATABASE}")


def on_postgres() -> bool:
    return TEST_DATABASE == "postgresql"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`postgres_only` tests are skipped in the SQLite pass only; the PostgreSQL pass runs them."""
    if on_postgres():
        return
    skip = pytest.mark.skip(
        reason="PostgreSQL only; runs in the DOCFLOW_TEST_DATABASE=postgresql pass"
    )
    for item in items:
        if "postgres_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def owner_db_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The migrated test database, as its owner (migrations, grants, DDL)."""
    if not on_postgres():
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'docflow.db'}"
        db.run_migrations(url)
        yield url
        return
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_test") as owner_url:
        db.ensure_app_role(owner_url, APP_ROLE)
        db.ensure_system_role(owner_url, SYSTEM_ROLE)
        db.run_migrations(owner_url, app_role=APP_ROLE)
        yield owner_url


@pytest.fixture(scope="session")
def db_url(owner_db_url: str) -> str:
    """The application's connection: on PostgreSQL the non-owner role without BYPASSRLS."""
    if not on_postgres():
        return owner_db_url
    return db.role_url(owner_db_url, APP_ROLE)


@pytest.fixture(scope="session")
def engine(db_url: str) -> Iterator[Engine]:
    engine = db.make_engine(db_url, pool_size=5)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def owner_engine(owner_db_url: str) -> Iterator[Engine]:
    """The table owner's engine: for setting up what the application may not do itself."""
    engine = db.make_engine(owner_db_url, pool_size=2)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def session_factory(engine: Engine) -> sessionmaker[Session]:
    return db.make_session_factory(engine)


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    """A session whose whole work is rolled back at the end of the test."""
    connection = engine.connect()
    outer = connection.begin()
    session = Session(
        bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False
    )
    try:
        yield session
    finally:
        session.close()
        outer.rollback()
        connection.close()


TenantFactory = Callable[..., TenantContext]


@pytest.fixture
def make_tenant(session: Session) -> TenantFactory:
    """Create a tenant in `session`; returns its context with every scope."""

    def make(name: str = "Tenant", plan: str = "free") -> TenantContext:
        tenant = tenants_service.create_tenant(session, name=name, plan=plan)
        return TenantContext(tenant_id=tenant.id, key_id=None, scopes=("*",))

    return make


@pytest.fixture
def tenant_a(make_tenant: TenantFactory) -> TenantContext:
    return make_tenant("Tenant A")


@pytest.fixture
def tenant_b(make_tenant: TenantFactory) -> TenantContext:
    return make_tenant("Tenant B")


def raw_count(session: Session, table: str) -> int:
    """Rows of `table` visible to `session` (row-level security included), by raw SQL."""
    return int(session.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def sample_definition(name: str = "Invoice", **overrides: object) -> ExtractionWorkflowDefinition:
    """A small valid extraction workflow definition, decided by the thresholds until reviews
    measure its fields (`cold_start: thresholds`, see `workflow_body`)."""
    data: dict[str, object] = {
        "name": name,
        "fields": [
            {"name": "invoice_number", "locators": [{"kind": "label", "labels": ["Invoice No"]}]},
            {
                "name": "total",
                "type": "money",
                "locators": [{"kind": "label", "labels": ["Total"]}],
            },
        ],
        "confidence_threshold": 0.5,
        "review_threshold": 0.8,
        "cold_start": "thresholds",
    }
    data.update(overrides)
    return ExtractionWorkflowDefinition.model_validate(data)


# Every table holding tenant data (row-level security on PostgreSQL).
TENANT_TABLES = (
    "memberships",
    "api_keys",
    "projects",
    "extraction_workflows",
    "extraction_workflow_versions",
    "batches",
    "documents",
    "idempotency_keys",
    "review_claims",
    "document_reviews",
    "document_review_fields",
    "search_entries",
    "invitations",
    "field_evidence",
    "field_trust",
)


@pytest.fixture
def empty_owner_db_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A brand-new, empty database of the kind under test (owner connection), dropped after."""
    if not on_postgres():
        yield f"sqlite:///{tmp_path_factory.mktemp('empty') / 'empty.db'}"
        return
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_test") as owner_url:
        yield owner_url


def make_batch(
    session: Session, tenant: TenantContext, count: int = 2, *, project: str = "AP"
) -> Batch:
    """A project, a workflow and a batch of `count` small declared PDFs, through the services."""
    made = projects_service.create_project(session, tenant, name=project)
    workflow = workflows_service.create_workflow(
        session, tenant, project_id=made.id, definition=sample_definition()
    )
    return batches_service.create_batch(
        session,
        tenant,
        project_id=made.id,
        workflow_id=workflow.id,
        documents=[DocumentSpec(f"d{i}.pdf", "application/pdf", 10) for i in range(count)],
        scheduled_for=None,
        upload_deadline=utcnow() + timedelta(hours=1),
        max_documents=100,
        max_document_bytes=10_000,
    )
