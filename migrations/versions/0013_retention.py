"""Retention: a project may keep its batches for a number of days only.

Revision ID: 0013_retention
Revises: 0012_tenant_status
Create Date: 2026-12-02

`projects.retention_days` (NULL: kept forever) is set through the projects API. The retention
schedule lists the projects that have one across tenants, then deletes each one's terminal
batches created before its cut-off, through the tenant's own scoped queries.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| the projects that have a retention (every       | ix_projects_retention (tenant_id, id)         |
|   tenant's, for the schedule)                   |   WHERE retention_days IS NOT NULL            |
| a project's batches created before a time       | ix_batches_project_created (0011)             |

On PostgreSQL the projects of every tenant are read through the SECURITY DEFINER function
`docflow_retention_projects`, which returns only (tenant id, project id, days); `projects`
keeps its row-level security (0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_retention"
down_revision: str | None = "0012_tenant_status"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HAS_RETENTION = sa.text("retention_days IS NOT NULL")

_LOOKUP = """
CREATE FUNCTION docflow_retention_projects(p_limit integer)
RETURNS TABLE (tenant_id text, project_id text, retention_days integer)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT p.tenant_id, p.id, p.retention_days FROM projects p
  WHERE p.retention_days IS NOT NULL
  ORDER BY p.tenant_id, p.id LIMIT p_limit
$$
"""


def upgrade() -> None:
    op.add_column("projects", sa.Column("retention_days", sa.Integer(), nullable=True))
    op.create_index(
        "ix_projects_retention",
        "projects",
        ["tenant_id", "id"],
        sqlite_where=_HAS_RETENTION,
        postgresql_where=_HAS_RETENTION,
    )
    if op.get_bind().dialect.name == "postgresql":
        op.create_check_constraint(
            op.f("ck_projects_retention_days"), "projects", "retention_days >= 1"
        )
        op.execute(_LOOKUP)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS docflow_retention_projects(integer)")
        op.drop_constraint(op.f("ck_projects_retention_days"), "projects", type_="check")
    op.drop_index("ix_projects_retention", table_name="projects")
    with op.batch_alter_table("projects", recreate="never") as batch:
        batch.drop_column("retention_days")
