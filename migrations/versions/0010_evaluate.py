"""Reviewed documents as labelled examples: find a workflow's most recently reviewed documents.

Revision ID: 0010_evaluate
Revises: 0009_rerun
Create Date: 2026-12-01

Measuring a workflow version on its reviewed documents (`POST /v1/workflows/{id}/evaluate`)
reads the workflow's N most recently reviewed documents. Only reviewed documents are in the
index (partial on `reviewed_at IS NOT NULL`), so it stays small however many documents the
workflow processed.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| a workflow's reviewed documents, most recently  | ix_documents_workflow_reviewed (tenant_id,    |
|   reviewed first                                |   workflow_id, reviewed_at, id) partial       |

The table keeps its row-level security (0001): an index changes nothing in its policies.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_evaluate"
down_revision: str | None = "0009_rerun"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REVIEWED = "reviewed_at IS NOT NULL"


def upgrade() -> None:
    op.create_index(
        "ix_documents_workflow_reviewed",
        "documents",
        ["tenant_id", "workflow_id", "reviewed_at", "id"],
        sqlite_where=sa.text(REVIEWED),
        postgresql_where=sa.text(REVIEWED),
    )


def downgrade() -> None:
    op.drop_index("ix_documents_workflow_reviewed", table_name="documents")
