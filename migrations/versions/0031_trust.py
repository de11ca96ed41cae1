"""Earned trust: reviewed examples per field, the estimate of each field, QA samples.

Revision ID: 0031_trust
Revises: 0029_event_deletion
Create Date: 2026-12-06

`field_evidence` holds one row per reviewed document and field (the confidence the engine gave
the value and whether the review left it as it was); `field_trust` the estimate the last
recalibration made of each field of a workflow version (its confidence cut and figures).
Both are tenant data under row-level security, deleted with their workflow (and the evidence
with its document). `documents.qa_sample` marks a document sent to review as a sample.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| a document's examples (rebuilt at each review)  | pk_field_evidence (tenant_id, document_id,    |
|                                                 |   field)                                      |
| a version's examples of a field, in review order| ix_field_evidence_field (tenant_id,           |
|                                                 |   workflow_id, workflow_version, field,       |
|                                                 |   reviewed_at)                                |
| a version's field estimates (every document)    | pk_field_trust (tenant_id, workflow_id,       |
|                                                 |   workflow_version, field)                    |
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0031_trust"
down_revision: str | None = "0030_console_accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("field_evidence", "field_trust")


def _id(name: str) -> sa.Column[str]:
    return sa.Column(name, sa.String(40), nullable=False)


def _workflow_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id", "workflow_id"],
        ["extraction_workflows.tenant_id", "extraction_workflows.id"],
        ondelete="CASCADE",
        name=f"fk_{table}_extraction_workflows",
    )


def _tables() -> None:
    op.create_table(
        "field_evidence",
        _id("tenant_id"),
        _id("document_id"),
        sa.Column("field", sa.String(64), nullable=False),
        _id("workflow_id"),
        sa.Column("workflow_version", sa.Integer(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "document_id", "field", name="pk_field_evidence"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "document_id"],
            ["documents.tenant_id", "documents.id"],
            ondelete="CASCADE",
            name="fk_field_evidence_documents",
        ),
        _workflow_fk("field_evidence"),
    )
    op.create_index(
        "ix_field_evidence_field",
        "field_evidence",
        ["tenant_id", "workflow_id", "workflow_version", "field", "reviewed_at"],
    )
    op.create_table(
        "field_trust",
        _id("tenant_id"),
        _id("workflow_id"),
        sa.Column("workflow_version", sa.Integer(), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("examples", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.Column("cut", sa.Float(), nullable=True),
        sa.Column("precision", sa.Float(), nullable=True),
        sa.Column("lower_bound", sa.Float(), nullable=True),
        sa.Column("automation_rate", sa.Float(), nullable=False),
        sa.Column("drifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint(
            "tenant_id", "workflow_id", "workflow_version", "field", name="pk_field_trust"
        ),
        _workflow_fk("field_trust"),
    )


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.add_column(
        "documents",
        sa.Column("qa_sample", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
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
    op.drop_column("documents", "qa_sample")
