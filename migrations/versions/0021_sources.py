"""Watched sources: a project's folders polled on a cron schedule, their runs and taken files.

Revision ID: 0021_sources
Revises: 0020_downstream
Create Date: 2026-12-02

| access pattern                                     | index                                   |
| -------------------------------------------------- | --------------------------------------- |
| a project's sources (API list)                     | ix_sources_project (tenant, project, id) |
| the sources due to be polled (every tenant's, for  | ix_sources_due (next_poll_at)           |
|   the schedule's tick)                             |                                         |
| a source's runs, newest first                      | ix_source_runs_source                   |
| a file taken once per source, path and content     | pk_source_files                         |
| the files a run took                               | ix_source_files_run (tenant, run)       |

The three tables are tenant data under row-level security, like every other (0001). On
PostgreSQL the due sources of every tenant are read through the SECURITY DEFINER function
`docflow_due_sources`, which returns only (tenant id, source id, due time).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0021_sources"
down_revision: str | None = "0020_downstream"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("sources", "source_runs", "source_files")

_LOOKUP = """
CREATE FUNCTION docflow_due_sources(p_now timestamptz, p_limit integer)
RETURNS TABLE (tenant_id text, source_id text, due_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT s.tenant_id, s.id, s.next_poll_at FROM sources s
  WHERE s.next_poll_at <= p_now
  ORDER BY s.next_poll_at LIMIT p_limit
$$
"""


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"], ["tenants.id"], ondelete="CASCADE", name=f"fk_{table}_tenants"
    )


def upgrade() -> None:
    op.create_table(
        "sources",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("project_id", sa.String(40), nullable=False),
        sa.Column("workflow_id", sa.String(40), nullable=False),
        sa.Column("path", sa.String(1000), nullable=False),
        sa.Column("cron", sa.String(120), nullable=False),
        sa.Column("move_after", sa.Boolean(), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("healthy", sa.Boolean(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("next_poll_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_poll_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_sources"),
        _tenant_fk("sources"),
    )
    op.create_index("ix_sources_project", "sources", ["tenant_id", "project_id", "id"])
    op.create_index("ix_sources_due", "sources", ["next_poll_at"])
    op.create_table(
        "source_runs",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("id", sa.String(120), nullable=False),
        sa.Column("source_id", sa.String(40), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("files_seen", sa.Integer(), nullable=False),
        sa.Column("files_taken", sa.Integer(), nullable=False),
        sa.Column("files_skipped", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.String(40), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_source_runs"),
        _tenant_fk("source_runs"),
    )
    op.create_index(
        "ix_source_runs_source", "source_runs", ["tenant_id", "source_id", "started_at"]
    )
    op.create_table(
        "source_files",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("source_id", sa.String(40), nullable=False),
        sa.Column("path", sa.String(1000), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(120), nullable=False),
        sa.Column("document_id", sa.String(40), nullable=True),
        sa.Column("moved_to", sa.String(20), nullable=True),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "source_id", "path", "sha256", name="pk_source_files"),
        _tenant_fk("source_files"),
    )
    op.create_index("ix_source_files_run", "source_files", ["tenant_id", "run_id"])
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        for statement in rls_statements(table):
            op.execute(statement)
    op.execute(_LOOKUP)
    role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(TABLES)} TO {role}; END IF; END $$"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS docflow_due_sources(timestamptz, integer)")
    for table in reversed(TABLES):
        op.drop_table(table)
