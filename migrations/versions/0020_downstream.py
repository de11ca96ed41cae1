"""Projection lag for `/readyz`: documents by their last change, across tenants.

Revision ID: 0020_downstream
Revises: 0019_key_expiry
Create Date: 2026-12-02

The readiness check looks at the most recent document changes older than the lag setting
(at most a fixed number of them) and counts those whose search entry is missing or holds an
older version.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| every tenant's latest document changes before a | ix_documents_changed (updated_at)             |
|   time (the projection lag check)               |                                               |
| their search entries                            | primary key (tenant_id, document_id) (0016)   |
| a page of documents' events                     | ix_outbox_events_subject (tenant_id, subject) |
| the webhook deliveries of those events          | ix_webhook_deliveries_event                   |
|                                                 |   (tenant_id, event_id)                       |

On PostgreSQL the documents of every tenant are read through the SECURITY DEFINER function
`docflow_search_lagging`, which returns only a count; `documents` and `search_entries` keep their
row-level security, and the owner gets a SELECT-only policy on both so the function reads them
when it is not a superuser.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020_downstream"
down_revision: str | None = "0019_key_expiry"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OWNER_READS = ("documents", "search_entries")

_LAGGING = """
CREATE FUNCTION docflow_search_lagging(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT count(*) FROM (
    SELECT d.tenant_id, d.id, d.version FROM documents d
    WHERE d.updated_at < p_before
      AND d.status IN ('SUCCEEDED', 'REVIEW_REQUIRED', 'FAILED', 'CANCELLED')
    ORDER BY d.updated_at DESC LIMIT p_limit
  ) r
  LEFT JOIN search_entries e ON e.tenant_id = r.tenant_id AND e.document_id = r.id
  WHERE e.version IS NULL OR e.version < r.version
$$
"""


def upgrade() -> None:
    op.create_index("ix_documents_changed", "documents", ["updated_at"])
    op.create_index("ix_outbox_events_subject", "outbox_events", ["tenant_id", "subject"])
    op.create_index(
        "ix_webhook_deliveries_event", "webhook_deliveries", ["tenant_id", "event_id"]
    )
    if op.get_bind().dialect.name == "postgresql":
        for table in _OWNER_READS:
            op.execute(
                f"CREATE POLICY owner_lookup ON {table} FOR SELECT TO CURRENT_USER USING (true)"
            )
        op.execute(_LAGGING)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS docflow_search_lagging(timestamptz, integer)")
        for table in _OWNER_READS:
            op.execute(f"DROP POLICY IF EXISTS owner_lookup ON {table}")
    op.drop_index("ix_webhook_deliveries_event", table_name="webhook_deliveries")
    op.drop_index("ix_outbox_events_subject", table_name="outbox_events")
    op.drop_index("ix_documents_changed", table_name="documents")
