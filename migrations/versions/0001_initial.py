"""Initial schema: tenants, users, memberships, API keys, projects, extraction workflows and
their versions, batches, documents, idempotency keys; on PostgreSQL, row-level security.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-29

Access pattern → index (every pattern of PRODUCT.md is served without a scan):

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| find a user by email                            | uq_users_email (email; stored lowercased)     |
| tenants of a user                               | ix_memberships_user_id (user_id)              |
| authenticate an API key, before the tenant      | uq_api_keys_prefix (prefix)                   |
| list a tenant's API keys                        | pk_api_keys (tenant_id, id)                   |
| list projects of a tenant (newest first)        | pk_projects (tenant_id, id), read backwards   |
| find a project by name                          | uq_projects_tenant_id_name                    |
| list workflows of a project, recently updated   | ix_extraction_workflows_recent (tenant_id,    |
|   first                                         |   project_id, updated_at, id), read backwards |
| find a workflow by name (`workflows apply -f`)  | uq_extraction_workflows_tenant_id_project_id_ |
|                                                 |   name                                        |
| get a workflow version                          | pk_extraction_workflow_versions               |
| get a batch by id (the pipeline knows only it)  | ux_batches_id (id, unique)                    |
| list a tenant's batches by status and date      | ix_batches_status_created (tenant_id, status, |
|                                                 |   created_at, id)                             |
| list a tenant's batches by date (no status)     | ix_batches_created (tenant_id, created_at, id)|
| waiting batches whose scheduled time has come   | ix_batches_waiting_scheduled (scheduled_for)  |
|                                                 |   WHERE status = 'CREATED'                    |
| waiting batches past their upload deadline      | ix_batches_waiting_deadline (upload_deadline) |
|                                                 |   WHERE status = 'CREATED'                    |
| list documents of a batch                       | ix_documents_batch (tenant_id, batch_id, id)  |
| documents of a batch by status (PENDING_UPLOAD, | ix_documents_batch_status (tenant_id,         |
|   UPLOADED, PROCESSING, FAILED, REVIEW_REQUIRED)|   batch_id, status, id) WHERE status IN (...) |
| documents of a batch that SUCCEEDED             | ix_documents_batch, filtered (≤ one batch)    |
| a tenant's documents needing review (or failed, | ix_documents_tenant_status (tenant_id,        |
|   or in flight), oldest change first            |   status, updated_at, id) WHERE status IN(...)|
| replay an idempotent request                    | pk_idempotency_keys (tenant_id, key)          |

The partial indexes leave out SUCCEEDED, the bulk of all rows (the seed's sparse index). On
SQLite a partial index is used only when the query repeats its WHERE terms, so the document
repository adds `status IN (...)` verbatim next to `status = :s`.

Row-level security (PostgreSQL only): every tenant table gets ENABLE + FORCE and the policy
`tenant_id = current_setting('app.tenant_id', true)` for reads and writes. Lookups that must cross
tenants go through SECURITY DEFINER functions returning the minimum: `docflow_api_key_lookup`
(a key's tenant, hash, scopes, revocation by prefix), `docflow_user_memberships` (a user's
tenants and roles), `docflow_batch_tenant` (a batch's tenant by id) and `docflow_due_batches`
(waiting batches whose time has come). As FORCE subjects the table owner to the policies too, the
owner (the role running this migration) gets a SELECT-only policy on `api_keys`, `batches` and
`memberships` so those functions can read them even when it is not a superuser.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TENANT_TABLES = (
    "memberships",
    "api_keys",
    "projects",
    "extraction_workflows",
    "extraction_workflow_versions",
    "batches",
    "documents",
    "idempotency_keys",
)
INDEXED_DOCUMENT_STATUSES = (
    "status IN ('PENDING_UPLOAD', 'UPLOADED', 'PROCESSING', 'FAILED', 'REVIEW_REQUIRED')"
)
BATCH_STATUSES = "('CREATED', 'PROCESSING', 'SUCCEEDED', 'REVIEW_REQUIRED', " + (
    "'PARTIALLY_FAILED', 'FAILED')"
)
DOCUMENT_STATUSES = "('PENDING_UPLOAD', 'UPLOADED', 'PROCESSING', 'SUCCEEDED', " + (
    "'REVIEW_REQUIRED', 'FAILED')"
)


def _id() -> sa.String:
    return sa.String(40)


def _ts(name: str, nullable: bool = False) -> sa.Column[sa.DateTime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _directory() -> None:
    op.create_table(
        "tenants",
        sa.Column("id", _id(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("plan", sa.String(32), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_tenants"),
    )
    op.create_table(
        "users",
        sa.Column("id", _id(), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("email", name="uq_users_email"),
    )
    op.create_table(
        "memberships",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("user_id", _id(), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "user_id", name="pk_memberships"),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], ondelete="CASCADE", name="fk_memberships_tenants"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], ondelete="CASCADE", name="fk_memberships_users"
        ),
    )
    op.create_index("ix_memberships_user_id", "memberships", ["user_id"])


def _api_keys() -> None:
    op.create_table(
        "api_keys",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("id", _id(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("prefix", sa.String(32), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        _ts("created_at"),
        _ts("last_used_at", nullable=True),
        _ts("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_api_keys"),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], ondelete="CASCADE", name="fk_api_keys_tenants"
        ),
        sa.UniqueConstraint("prefix", name="uq_api_keys_prefix"),
    )


def _projects() -> None:
    op.create_table(
        "projects",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("id", _id(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("batch_count", sa.Integer(), nullable=False),
        sa.Column("document_count", sa.Integer(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_projects"),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], ondelete="CASCADE", name="fk_projects_tenants"
        ),
        sa.UniqueConstraint("tenant_id", "name", name="uq_projects_tenant_id_name"),
    )


def _workflows() -> None:
    op.create_table(
        "extraction_workflows",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("id", _id(), nullable=False),
        sa.Column("project_id", _id(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("current_version", sa.Integer(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_extraction_workflows"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "project_id"],
            ["projects.tenant_id", "projects.id"],
            ondelete="CASCADE",
            name="fk_extraction_workflows_projects",
        ),
        sa.UniqueConstraint(
            "tenant_id",
            "project_id",
            "name",
            name="uq_extraction_workflows_tenant_id_project_id_name",
        ),
    )
    _workflow_index_and_versions()


def _workflow_index_and_versions() -> None:
    op.create_index(
        "ix_extraction_workflows_recent",
        "extraction_workflows",
        ["tenant_id", "project_id", "updated_at", "id"],
    )
    op.create_table(
        "extraction_workflow_versions",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("workflow_id", _id(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("schema_hash", sa.String(64), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint(
            "tenant_id", "workflow_id", "version", name="pk_extraction_workflow_versions"
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "workflow_id"],
            ["extraction_workflows.tenant_id", "extraction_workflows.id"],
            ondelete="CASCADE",
            name="fk_extraction_workflow_versions_extraction_workflows",
        ),
    )


def _batches() -> None:
    op.create_table(
        "batches",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("id", _id(), nullable=False),
        sa.Column("project_id", _id(), nullable=False),
        sa.Column("workflow_id", _id(), nullable=False),
        sa.Column("workflow_version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        *[
            sa.Column(name, sa.Integer(), nullable=False)
            for name in (
                "document_count",
                "uploaded_count",
                "succeeded_count",
                "review_count",
                "failed_count",
            )
        ],
        _ts("scheduled_for", nullable=True),
        _ts("upload_deadline"),
        _ts("started_at", nullable=True),
        _ts("completed_at", nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_batches"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "project_id"],
            ["projects.tenant_id", "projects.id"],
            ondelete="CASCADE",
            name="fk_batches_projects",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "workflow_id", "workflow_version"],
            [
                "extraction_workflow_versions.tenant_id",
                "extraction_workflow_versions.workflow_id",
                "extraction_workflow_versions.version",
            ],
            name="fk_batches_extraction_workflow_versions",
        ),
        sa.CheckConstraint(f"status IN {BATCH_STATUSES}", name=op.f("ck_batches_status")),
    )
    _batch_indexes()


def _batch_indexes() -> None:
    op.create_index("ux_batches_id", "batches", ["id"], unique=True)
    op.create_index(
        "ix_batches_status_created", "batches", ["tenant_id", "status", "created_at", "id"]
    )
    op.create_index("ix_batches_created", "batches", ["tenant_id", "created_at", "id"])
    waiting = sa.text("status = 'CREATED'")
    for name, column in (("scheduled", "scheduled_for"), ("deadline", "upload_deadline")):
        op.create_index(
            f"ix_batches_waiting_{name}",
            "batches",
            [column],
            sqlite_where=waiting,
            postgresql_where=waiting,
        )


def _documents() -> None:
    op.create_table(
        "documents",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("id", _id(), nullable=False),
        sa.Column("batch_id", _id(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("content_type", sa.String(127), nullable=False),
        sa.Column("declared_size", sa.BigInteger(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("sha256", sa.String(64), nullable=True),
        sa.Column("detected_type", sa.String(127), nullable=True),
        sa.Column("storage_key", sa.String(512), nullable=True),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("error_reason", sa.Text(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("result_ref", sa.String(512), nullable=True),
        _ts("uploaded_at", nullable=True),
        _ts("started_at", nullable=True),
        _ts("completed_at", nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_documents"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "batch_id"],
            ["batches.tenant_id", "batches.id"],
            ondelete="CASCADE",
            name="fk_documents_batches",
        ),
        sa.CheckConstraint(f"status IN {DOCUMENT_STATUSES}", name=op.f("ck_documents_status")),
    )
    _document_indexes()


def _document_indexes() -> None:
    op.create_index("ix_documents_batch", "documents", ["tenant_id", "batch_id", "id"])
    interesting = sa.text(INDEXED_DOCUMENT_STATUSES)
    for name, columns in (
        ("batch_status", ["tenant_id", "batch_id", "status", "id"]),
        ("tenant_status", ["tenant_id", "status", "updated_at", "id"]),
    ):
        op.create_index(
            f"ix_documents_{name}",
            "documents",
            columns,
            sqlite_where=interesting,
            postgresql_where=interesting,
        )


def _idempotency_keys() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant_id", _id(), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("request_fingerprint", sa.String(128), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response_body", sa.JSON(), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("tenant_id", "key", name="pk_idempotency_keys"),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], ondelete="CASCADE", name="fk_idempotency_keys_tenants"
        ),
    )


LOOKUP_FUNCTIONS = (
    """
    CREATE FUNCTION docflow_api_key_lookup(p_prefix text)
    RETURNS TABLE (tenant_id text, key_id text, key_hash text, scopes json,
                   revoked boolean, last_used_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT k.tenant_id, k.id, k.key_hash, k.scopes, k.revoked_at IS NOT NULL, k.last_used_at
      FROM api_keys k WHERE k.prefix = p_prefix
    $$
    """,
    """
    CREATE FUNCTION docflow_user_memberships(p_user_id text)
    RETURNS TABLE (tenant_id text, role text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT m.tenant_id, m.role FROM memberships m WHERE m.user_id = p_user_id
      ORDER BY m.tenant_id
    $$
    """,
    """
    CREATE FUNCTION docflow_batch_tenant(p_batch_id text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT b.tenant_id FROM batches b WHERE b.id = p_batch_id $$
    """,
    """
    CREATE FUNCTION docflow_due_batches(p_now timestamptz, p_limit integer)
    RETURNS TABLE (tenant_id text, batch_id text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT d.tenant_id, d.id FROM (
        SELECT b.tenant_id, b.id FROM batches b
        WHERE b.status = 'CREATED' AND b.scheduled_for <= p_now
        UNION
        SELECT b.tenant_id, b.id FROM batches b
        WHERE b.status = 'CREATED' AND b.upload_deadline <= p_now
      ) d ORDER BY d.id LIMIT p_limit
    $$
    """,
)


def _row_level_security() -> None:
    for table in TENANT_TABLES:
        for statement in rls_statements(table):
            op.execute(statement)
    for table in ("api_keys", "batches", "memberships"):
        op.execute(f"CREATE POLICY owner_lookup ON {table} FOR SELECT TO CURRENT_USER USING (true)")
    for statement in LOOKUP_FUNCTIONS:
        op.execute(statement)
    role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
    tables = ", ".join(("tenants", "users", *TENANT_TABLES))
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {role}; "
        # Default privileges (see docflow.db.ensure_app_role) may have granted it this one.
        f"REVOKE ALL ON alembic_version FROM {role}; END IF; END $$"
    )


def upgrade() -> None:
    _directory()
    _api_keys()
    _projects()
    _workflows()
    _batches()
    _documents()
    _idempotency_keys()
    if op.get_bind().dialect.name == "postgresql":
        _row_level_security()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS docflow_due_batches(timestamptz, integer)")
        op.execute("DROP FUNCTION IF EXISTS docflow_batch_tenant(text)")
        op.execute("DROP FUNCTION IF EXISTS docflow_api_key_lookup(text)")
        op.execute("DROP FUNCTION IF EXISTS docflow_user_memberships(text)")
    for table in (
        "idempotency_keys",
        "documents",
        "batches",
        "extraction_workflow_versions",
        "extraction_workflows",
        "projects",
        "api_keys",
        "memberships",
        "users",
        "tenants",
    ):
        op.drop_table(table)
