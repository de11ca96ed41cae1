"""Events: the transactional outbox and the consumers' dead letters.

Revision ID: 0003_events
Revises: 0002_executor_heartbeats
Create Date: 2026-11-29

Both tables are tenant data: row-level security as on every tenant table. The publisher serves
every tenant, so on PostgreSQL it finds unpublished rows through `docflow_outbox_unpublished`
(SECURITY DEFINER, returning only tenant and event ids, oldest first), then reads and marks each
row under its tenant. `docflow_event_signals` gives the readiness check the dead-letter count and
the oldest unpublished row's time, and nothing else. The owner gets a SELECT-only policy on both
tables so those functions can read them when it is not a superuser.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0003_events"
down_revision: str | None = "0002_executor_heartbeats"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("outbox_events", "event_dead_letters")

FUNCTIONS = (
    """
    CREATE FUNCTION docflow_outbox_unpublished(p_limit integer)
    RETURNS TABLE (tenant_id text, event_id text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT o.tenant_id, o.id FROM outbox_events o WHERE o.published_at IS NULL
      ORDER BY o.occurred_at, o.id LIMIT p_limit
    $$
    """,
    """
    CREATE FUNCTION docflow_event_signals()
    RETURNS TABLE (dead_letters bigint, oldest_unpublished timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT (SELECT count(*) FROM event_dead_letters d WHERE d.redriven_at IS NULL),
             (SELECT min(o.occurred_at) FROM outbox_events o WHERE o.published_at IS NULL)
    $$
    """,
)


def _outbox() -> None:
    op.create_table(
        "outbox_events",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("type", sa.String(120), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_outbox_events"),
    )
    op.create_index(
        "ix_outbox_events_unpublished",
        "outbox_events",
        ["occurred_at", "id"],
        postgresql_where=sa.text("published_at IS NULL"),
        sqlite_where=sa.text("published_at IS NULL"),
    )
    op.create_index(
        "ix_outbox_events_tenant_time", "outbox_events", ["tenant_id", "occurred_at", "id"]
    )


def _dead_letters() -> None:
    op.create_table(
        "event_dead_letters",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("consumer", sa.String(80), nullable=False),
        sa.Column("event_id", sa.String(40), nullable=False),
        sa.Column("event_type", sa.String(120), nullable=False),
        sa.Column("envelope", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("category", sa.String(40), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("redriven_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("redriven_by", sa.String(200), nullable=True),
        sa.Column("redrive_reason", sa.Text(), nullable=True),
        sa.Column("redrive_workflow_id", sa.String(300), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_event_dead_letters"),
    )
    op.create_index(
        "ix_event_dead_letters_tenant_time",
        "event_dead_letters",
        ["tenant_id", "created_at", "id"],
    )


def _row_level_security() -> None:
    for table in TABLES:
        for statement in rls_statements(table):
            op.execute(statement)
        op.execute(f"CREATE POLICY owner_lookup ON {table} FOR SELECT TO CURRENT_USER USING (true)")
    for statement in FUNCTIONS:
        op.execute(statement)
    role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(TABLES)} TO {role}; END IF; END $$"
    )


def upgrade() -> None:
    _outbox()
    _dead_letters()
    if op.get_bind().dialect.name == "postgresql":
        _row_level_security()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS docflow_event_signals()")
        op.execute("DROP FUNCTION IF EXISTS docflow_outbox_unpublished(integer)")
    op.drop_index("ix_event_dead_letters_tenant_time", table_name="event_dead_letters")
    op.drop_table("event_dead_letters")
    op.drop_index("ix_outbox_events_tenant_time", table_name="outbox_events")
    op.drop_index("ix_outbox_events_unpublished", table_name="outbox_events")
    op.drop_table("outbox_events")
