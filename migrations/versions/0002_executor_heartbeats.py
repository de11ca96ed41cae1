"""Executor heartbeats (one row per live worker process, so survivors find dead ones) and
step attempts (the failed attempts DBOS retried, for the execution history).

Revision ID: 0002_executor_heartbeats
Revises: 0001_initial
Create Date: 2026-11-29

Neither is tenant data, so no row-level security: a worker serves every tenant, and a step
attempt is keyed by an execution id that the history reads only after reading the batch or
document it names under the caller's tenant. `executor_heartbeats` is tiny (one row per worker)
and read whole by the reaper's DELETE ... RETURNING. `step_attempts` is read by execution id
(ix_step_attempts_execution).
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
    op.create_table(
        "step_attempts",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("execution_id", sa.String(200), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_step_attempts"),
    )
    op.create_index(
        "ix_step_attempts_execution", "step_attempts", ["execution_id", "step", "attempt"]
    )
    if op.get_bind().dialect.name == "postgresql":
        role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
        op.execute(
            f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
            "GRANT SELECT, INSERT, UPDATE, DELETE ON executor_heartbeats, step_attempts "
            f"TO {role}; END IF; END $$"
        )


def downgrade() -> None:
    op.drop_index("ix_step_attempts_execution", table_name="step_attempts")
    op.drop_table("step_attempts")
    op.drop_table("executor_heartbeats")
