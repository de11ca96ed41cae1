"""Language-model gap-fill: the cost ledger, the result cache and the monthly budgets.

Revision ID: 0015_llm
Revises: 0014_console
Create Date: 2026-12-02

Three tenant tables, each with `tenant_id` leading its primary key and row-level security:
`llm_calls` (one row per provider call or cache hit: task, provider, model, tier, tokens,
latency, cost), `llm_results` (answers reused until `expires_at`) and `llm_budget_months`
(calls reserved per calendar month, and when the 80% warning went out).

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| a tenant's usage over a period                  | ix_llm_calls_created (tenant_id, created_at)  |
| ... of a project                                | ix_llm_calls_project (tenant_id, project_id,  |
|                                                 |   created_at)                                 |
| a cached answer                                 | pk_llm_results (tenant_id, key)               |
| a tenant's expired answers (deleted on a store) | ix_llm_results_expires (tenant_id,            |
|                                                 |   expires_at)                                 |
| a tenant's month (reserve a call atomically)    | pk_llm_budget_months (tenant_id, month)       |
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0015_llm"
down_revision: str | None = "0014_console"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("llm_calls", "llm_results", "llm_budget_months")


def _id(name: str) -> sa.Column[str]:
    return sa.Column(name, sa.String(40), nullable=False)


def _ts(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _int(name: str) -> sa.Column[int]:
    return sa.Column(name, sa.Integer(), nullable=False, server_default="0")


def upgrade() -> None:
    op.create_table(
        "llm_calls",
        _id("tenant_id"),
        _id("id"),
        _id("project_id"),
        _id("batch_id"),
        _id("document_id"),
        sa.Column("task", sa.String(16), nullable=False),
        sa.Column("provider", sa.String(16), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        _int("input_tokens"),
        _int("cached_tokens"),
        _int("output_tokens"),
        sa.Column("latency_ms", sa.Float(), nullable=False, server_default="0"),
        sa.Column("cost", sa.Numeric(18, 6), nullable=False, server_default="0"),
        sa.Column("cache_hit", sa.Boolean(), nullable=False, server_default=sa.false()),
        _int("attempts"),
        sa.Column("error", sa.String(200), nullable=True),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_llm_calls"),
    )
    op.create_index("ix_llm_calls_created", "llm_calls", ["tenant_id", "created_at"])
    op.create_index(
        "ix_llm_calls_project", "llm_calls", ["tenant_id", "project_id", "created_at"]
    )
    op.create_table(
        "llm_results",
        _id("tenant_id"),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("answer", sa.JSON(), nullable=False),
        _ts("created_at"),
        _ts("expires_at"),
        sa.PrimaryKeyConstraint("tenant_id", "key", name="pk_llm_results"),
    )
    op.create_index("ix_llm_results_expires", "llm_results", ["tenant_id", "expires_at"])
    op.create_table(
        "llm_budget_months",
        _id("tenant_id"),
        sa.Column("month", sa.String(7), nullable=False),
        _int("calls"),
        _ts("warned_at", nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "month", name="pk_llm_budget_months"),
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
