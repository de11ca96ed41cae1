"""Executor heartbeats: one row per live worker process, so survivors find dead ones.

Revision ID: 0002_executor_heartbeats
Revises: 0001_initial
Create Date: 2026-11-29

Not tenant data (a worker serves every tenant), so no row-level security. The table is tiny
(one row per worker) and read whole by the reaper's DELETE ... RETURNING; its primary key is
the only index it needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name

revision: str = "0002_executor_heartbeats"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "executor_heartbeats",
        sa.Column("executor_id", sa.String(128), nullable=False),
        sa.Column("hostname", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("executor_id", name="pk_executor_heartbeats"),
    )
    if op.get_bind().dialect.name == "postgresql":
        role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
        op.execute(
            f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON executor_heartbeats TO {role}; END IF; END $$"
        )


def downgrade() -> None:
    op.drop_table("executor_heartbeats")
