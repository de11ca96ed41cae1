"""A taken file's size and change time, so a poll need not read an unchanged file again.

Revision ID: 0028_source_stat
Revises: 0027_crypt
Create Date: 2026-12-02

`source_files.size` and `source_files.mtime_ns` record a folder file's size and change time
(nanoseconds) when it was last keyed by its SHA-256. A poll that finds a file with the same
path, size and change time as a taken file's reuses that file's recorded hash instead of
reading it. Both are nullable: files taken before this revision have neither, are hashed once
more by the next poll, which records them. A poll reads them for one source:

| access pattern                           | index                                          |
| ---------------------------------------- | ---------------------------------------------- |
| a source's taken files still in place    | pk_source_files (tenant_id, source_id, ...)    |
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028_source_stat"
down_revision: str | None = "0027_crypt"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("source_files", sa.Column("size", sa.BigInteger(), nullable=True))
    op.add_column("source_files", sa.Column("mtime_ns", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("source_files") as batch:
        batch.drop_column("mtime_ns")
        batch.drop_column("size")
