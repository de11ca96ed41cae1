"""Plans and quotas: a tenant's consumption per month, and each API key's rate-limit state.

Revision ID: 0017_quotas
Revises: 0016_search
Create Date: 2026-12-02

| access pattern                                     | index                               |
| -------------------------------------------------- | ----------------------------------- |
| a tenant's documents and pages this month (charge  | pk_tenant_usage (tenant_id, month)  |
|   a batch, count a document's pages, GET /usage)   |                                     |
| an API key's rate state (every request, PostgreSQL) | pk_rate_limits (tenant_id, key_id) |

Both tables are tenant data under row-level security, like every other (0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0017_quotas"
down_revision: str | None = "0016_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("tenant_usage", "rate_limits")


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"], ["tenants.id"], ondelete="CASCADE", name=f"fk_{table}_tenants"
    )


def upgrade() -> None:
    op.create_table(
        "tenant_usage",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("month", sa.String(7), nullable=False),
        sa.Column("documents", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("pages", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("tenant_id", "month", name="pk_tenant_usage"),
        _tenant_fk("tenant_usage"),
    )
    op.create_table(
        "rate_limits",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("tat", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "key_id", name="pk_rate_limits"),
        _tenant_fk("rate_limits"),
    )
    if op.get_bind().dialect.name != "postgresql":
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
