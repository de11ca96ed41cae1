"""Webhooks: endpoints per project, deliveries (one per event and endpoint) and their attempts.

Revision ID: 0004_webhooks
Revises: 0003_events
Create Date: 2026-11-29

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| get an endpoint by id                           | pk_webhook_endpoints (tenant_id, id)          |
| endpoints of a project (list, fan-out)          | ix_webhook_endpoints_project (tenant_id,      |
|                                                 |   project_id, id)                             |
| one delivery per (endpoint, event)              | uq_webhook_deliveries_tenant_id_endpoint_id_  |
|                                                 |   event_id                                    |
| an endpoint's delivery log, newest first        | ix_webhook_deliveries_endpoint (tenant_id,    |
|                                                 |   endpoint_id, id), read backwards            |
| the attempts of a delivery                      | uq_webhook_attempts_tenant_id_delivery_id_    |
|                                                 |   attempt                                     |

All three are tenant tables: on PostgreSQL row-level security confines them to `app.tenant_id`.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0004_webhooks"
down_revision: str | None = "0003_events"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("webhook_endpoints", "webhook_deliveries", "webhook_attempts")


def _id(name: str) -> sa.Column[str]:
    return sa.Column(name, sa.String(40), nullable=False)


def _ts(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _endpoints() -> None:
    op.create_table(
        "webhook_endpoints",
        _id("tenant_id"),
        _id("id"),
        _id("project_id"),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=False),
        sa.Column("secret_sealed", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(500), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_webhook_endpoints"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "project_id"],
            ["projects.tenant_id", "projects.id"],
            ondelete="CASCADE",
            name="fk_webhook_endpoints_projects",
        ),
    )
    op.create_index(
        "ix_webhook_endpoints_project", "webhook_endpoints", ["tenant_id", "project_id", "id"]
    )


def _deliveries() -> None:
    op.create_table(
        "webhook_deliveries",
        _id("tenant_id"),
        _id("id"),
        _id("endpoint_id"),
        sa.Column("event_id", sa.String(200), nullable=False),
        sa.Column("event_type", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        _ts("next_attempt_at", nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_webhook_deliveries"),
        sa.UniqueConstraint(
            "tenant_id",
            "endpoint_id",
            "event_id",
            name="uq_webhook_deliveries_tenant_id_endpoint_id_event_id",
        ),
    )
    op.create_index(
        "ix_webhook_deliveries_endpoint", "webhook_deliveries", ["tenant_id", "endpoint_id", "id"]
    )


def _attempts() -> None:
    op.create_table(
        "webhook_attempts",
        _id("tenant_id"),
        _id("id"),
        _id("delivery_id"),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("attempted_at"),
        _ts("next_retry_at", nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_webhook_attempts"),
        sa.UniqueConstraint(
            "tenant_id",
            "delivery_id",
            "attempt",
            name="uq_webhook_attempts_tenant_id_delivery_id_attempt",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "delivery_id"],
            ["webhook_deliveries.tenant_id", "webhook_deliveries.id"],
            ondelete="CASCADE",
            name="fk_webhook_attempts_webhook_deliveries",
        ),
    )


def upgrade() -> None:
    _endpoints()
    _deliveries()
    _attempts()
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
