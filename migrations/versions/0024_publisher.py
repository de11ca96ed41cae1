"""Who published each workflow version.

Revision ID: 0024_publisher
Revises: 0022_projections
Create Date: 2026-12-02

`extraction_workflow_versions.published_by` names who published the version: `console
<email>` for the console, the API key's id for the API (`key_…`), `operator` for the command
line. Versions published before this revision have none (NULL): nobody recorded it then.
No new access pattern: the column is read with its version.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024_publisher"
down_revision: str | None = "0022_projections"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("extraction_workflow_versions") as batch:
        batch.add_column(sa.Column("published_by", sa.String(length=320), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("extraction_workflow_versions") as batch:
        batch.drop_column("published_by")
