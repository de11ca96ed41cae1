"""The downstream state last recorded for each completed document, and the periodic pass's lookup.

Revision ID: 0026_downstream_state
Revises: 0025_oidc
Create Date: 2026-12-02

`document_downstream` holds one row per completed document that has had its downstream state
checked: READY or DEGRADED, the projections behind, the document version. It changes only by
compare-and-set on `state`, with a `docflow.document.downstream_changed.v1` event written in the
same transaction. Its rows go with their document (ON DELETE CASCADE).

The periodic pass looks for the documents that crossed the lag setting since its last ticks:
terminal documents changed in a time window whose search entry is behind, and webhook
deliveries created in that window still PENDING.

| access pattern                                   | index                                     |
| ------------------------------------------------ | ----------------------------------------- |
| a document's recorded downstream state           | primary key (tenant_id, document_id)      |
| every tenant's documents changed in a window     | ix_documents_changed (updated_at) (0020)  |
|   (the downstream pass)                          |                                           |
| every tenant's deliveries created in a window    | ix_webhook_deliveries_pending             |
|   and still PENDING (the downstream pass)        |   (created_at) WHERE status = 'PENDING'   |
| their events                                     | primary key (tenant_id, id) (0003)        |

On PostgreSQL the pass reads every tenant through the SECURITY DEFINER function
`docflow_downstream_due`, which returns only (tenant id, document id); the owner gets a
SELECT-only policy on `webhook_deliveries` and `document_downstream` so the function reads them
when it is not a superuser (`documents`, `search_entries` and `outbox_events` have theirs).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0026_downstream_state"
down_revision: str | None = "0025_oidc"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "document_downstream"
_OWNER_READS = ("webhook_deliveries", TABLE)

_DUE = """
CREATE FUNCTION docflow_downstream_due(
  p_changed_from timestamptz, p_changed_before timestamptz, p_limit integer
)
RETURNS TABLE (tenant_id text, document_id text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  (SELECT d.tenant_id::text, d.id::text FROM documents d
    LEFT JOIN search_entries e ON e.tenant_id = d.tenant_id AND e.document_id = d.id
    LEFT JOIN document_downstream s ON s.tenant_id = d.tenant_id AND s.document_id = d.id
   WHERE d.updated_at >= p_changed_from AND d.updated_at < p_changed_before
     AND d.status IN ('SUCCEEDED', 'REVIEW_REQUIRED', 'FAILED', 'CANCELLED')
     AND (e.version IS NULL OR e.version < d.version)
     AND (s.state IS NULL OR s.state <> 'DEGRADED')
   ORDER BY d.updated_at LIMIT p_limit)
  UNION
  (SELECT w.tenant_id::text, substr(o.subject, 11) FROM webhook_deliveries w
    JOIN outbox_events o ON o.tenant_id = w.tenant_id AND o.id = w.event_id
   WHERE w.status = 'PENDING'
     AND w.created_at >= p_changed_from AND w.created_at < p_changed_before
     AND left(o.subject, 10) = 'documents/'
     AND o.type <> 'docflow.document.downstream_changed.v1'
   ORDER BY w.created_at LIMIT p_limit)
$$
"""


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("document_id", sa.String(40), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("lagging", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "document_id", name="pk_document_downstream"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "document_id"],
            ["documents.tenant_id", "documents.id"],
            ondelete="CASCADE",
            name="fk_document_downstream_documents",
        ),
        sa.CheckConstraint("state IN ('READY', 'DEGRADED')", name="ck_document_downstream_state"),
    )
    op.create_index(
        "ix_webhook_deliveries_pending",
        "webhook_deliveries",
        ["created_at"],
        sqlite_where=sa.text("status = 'PENDING'"),
        postgresql_where=sa.text("status = 'PENDING'"),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in rls_statements(TABLE):
        op.execute(statement)
    for table in _OWNER_READS:
        op.execute(f"CREATE POLICY owner_lookup ON {table} FOR SELECT TO CURRENT_USER USING (true)")
    op.execute(_DUE)
    role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLE} TO {role}; END IF; END $$"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "DROP FUNCTION IF EXISTS docflow_downstream_due(timestamptz, timestamptz, integer)"
        )
        op.execute("DROP POLICY IF EXISTS owner_lookup ON webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_pending", table_name="webhook_deliveries")
    op.drop_table(TABLE)
