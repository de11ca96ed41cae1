"""Re-runs: a batch may re-run another batch's stored files against another workflow version.

Revision ID: 0009_rerun
Revises: 0008_review
Create Date: 2026-12-01

`batches.rerun_of` names the batch a re-run was asked for; `documents.source_document_id` names
the uploaded document whose stored file a re-run's document processes again (the original
upload, also for a re-run of a re-run). The file is shared, never copied: the re-run's
document carries the same `storage_key`. Neither column is a foreign key: a re-run stands on
its own rows, so nothing about the batch it came from may remove or block it.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| the documents of a batch that re-run given      | ix_documents_batch_source (tenant_id,         |
|   uploads (a diff's counterparts)               |   batch_id, source_document_id)               |

Both tables keep their row-level security (0001): new columns and an index change nothing in
their policies or grants.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_rerun"
down_revision: str | None = "0008_review"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("batches", sa.Column("rerun_of", sa.String(40), nullable=True))
    op.add_column("documents", sa.Column("source_document_id", sa.String(40), nullable=True))
    op.create_index(
        "ix_documents_batch_source",
        "documents",
        ["tenant_id", "batch_id", "source_document_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_documents_batch_source", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("source_document_id")
    with op.batch_alter_table("batches") as batch:
        batch.drop_column("rerun_of")
