"""Human review: document queries across a tenant, reviewers' claims and the review audit trail.

Revision ID: 0008_review
Revises: 0007_users
Create Date: 2026-12-01

`documents` gains its batch's project and workflow (copied from the batch, which never changes
them) and `reviewed_at`; existing rows are filled from their batch. Two new tenant tables:
`review_claims` (one row per document someone holds or held: the lease ends at `expires_at`,
compared at read time, so no sweeper) and the append-only audit trail, `document_reviews` (one
per decision) with `document_review_fields` (one per corrected field: original value and
confidence, corrected value).

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| a tenant's documents, newest first              | pk_documents (tenant_id, id), read backwards  |
| ... of a project / of a workflow                | ix_documents_project / ix_documents_workflow  |
|                                                 |   (tenant_id, project_id|workflow_id, id)     |
| ... by status (in-flight or attention statuses) | ix_documents_tenant_status (0001), its few    |
|                                                 |   rows sorted by id (PostgreSQL)              |
| ... of a batch                                  | ix_documents_batch (0001)                     |
| the review queue of a project, oldest first     | ix_documents_project_status (tenant_id,       |
|                                                 |   project_id, status, updated_at, id), partial|
| a document's claim                              | pk_review_claims (tenant_id, document_id)     |
| a document's reviews, in order                  | ix_document_reviews_document (tenant_id,      |
|                                                 |   document_id, id)                            |
| a review's corrected fields                     | pk_document_review_fields (tenant_id,         |
|                                                 |   review_id, field)                           |

`since` / `until` bound the id: ids are ULIDs whose first part is the creation time.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0008_review"
down_revision: str | None = "0007_users"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("review_claims", "document_reviews", "document_review_fields")
# The partial indexes' predicate (docflow.documents.models.INDEXED_STATUS_PREDICATE, verbatim).
STATUS_PREDICATE = (
    "status IN ('PENDING_UPLOAD', 'UPLOADED', 'PROCESSING', 'FAILED', 'REVIEW_REQUIRED')"
)
BACKFILL = """
UPDATE documents SET
  project_id = (SELECT b.project_id FROM batches b
                WHERE b.tenant_id = documents.tenant_id AND b.id = documents.batch_id),
  workflow_id = (SELECT b.workflow_id FROM batches b
                 WHERE b.tenant_id = documents.tenant_id AND b.id = documents.batch_id)
"""


def _id(name: str, *, nullable: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.String(40), nullable=nullable)


def _ts(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _documents(postgres: bool) -> None:
    op.add_column("documents", _id("project_id", nullable=True))
    op.add_column("documents", _id("workflow_id", nullable=True))
    op.add_column("documents", _ts("reviewed_at", nullable=True))
    if postgres:
        # FORCEd row-level security hides every row from an owner that is not a superuser.
        op.execute("ALTER TABLE documents NO FORCE ROW LEVEL SECURITY")
        op.execute(BACKFILL)
        op.execute("ALTER TABLE documents FORCE ROW LEVEL SECURITY")
    else:
        op.execute(BACKFILL)
    op.create_index("ix_documents_project", "documents", ["tenant_id", "project_id", "id"])
    op.create_index("ix_documents_workflow", "documents", ["tenant_id", "workflow_id", "id"])
    where = sa.text(STATUS_PREDICATE)
    op.create_index(
        "ix_documents_project_status",
        "documents",
        ["tenant_id", "project_id", "status", "updated_at", "id"],
        sqlite_where=where,
        postgresql_where=where,
    )


def _document_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id", "document_id"],
        ["documents.tenant_id", "documents.id"],
        ondelete="CASCADE",
        name=f"fk_{table}_documents",
    )


def _tables() -> None:
    op.create_table(
        "review_claims",
        _id("tenant_id"),
        _id("document_id"),
        sa.Column("reviewer", sa.String(200), nullable=False),
        _ts("claimed_at"),
        _ts("expires_at"),
        sa.PrimaryKeyConstraint("tenant_id", "document_id", name="pk_review_claims"),
        _document_fk("review_claims"),
    )
    op.create_table(
        "document_reviews",
        _id("tenant_id"),
        _id("id"),
        _id("document_id"),
        sa.Column("decision", sa.String(20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("reviewer", sa.String(200), nullable=False),
        sa.Column("status_before", sa.String(32), nullable=False),
        sa.Column("status_after", sa.String(32), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_document_reviews"),
        sa.CheckConstraint(
            "decision IN ('approve', 'reject')", name=op.f("ck_document_reviews_decision")
        ),
        _document_fk("document_reviews"),
    )
    op.create_index(
        "ix_document_reviews_document", "document_reviews", ["tenant_id", "document_id", "id"]
    )
    op.create_table(
        "document_review_fields",
        _id("tenant_id"),
        _id("review_id"),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("original_value", sa.Text(), nullable=True),
        sa.Column("original_confidence", sa.Float(), nullable=True),
        sa.Column("corrected_value", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint(
            "tenant_id", "review_id", "field", name="pk_document_review_fields"
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "review_id"],
            ["document_reviews.tenant_id", "document_reviews.id"],
            ondelete="CASCADE",
            name="fk_document_review_fields_document_reviews",
        ),
    )


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    _documents(postgres)
    _tables()
    if not postgres:
        return
    for table in TABLES:
        for statement in rls_statements(table):
            op.execute(statement)
    role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(TABLES)} TO {role}; END IF; END $$"
    )


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
    for index in (
        "ix_documents_project_status",
        "ix_documents_workflow",
        "ix_documents_project",
    ):
        op.drop_index(index, table_name="documents")
    for column in ("reviewed_at", "workflow_id", "project_id"):
        op.drop_column("documents", column)
