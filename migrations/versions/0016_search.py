"""Search: the projection's entries and their full-text index.

Revision ID: 0016_search
Revises: 0015_llm
Create Date: 2026-12-02

`search_entries` holds one entry per document (`docflow.search.models`), tenant-led key,
row-level security as every tenant table. The full-text index is the engine's own:

- PostgreSQL: a GIN index over `to_tsvector('simple', body)` (an expression index, so no
  second copy of the text is stored).
- SQLite: the FTS5 table `search_fts(body, tenant_id, document_id)` whose rowid is the
  entry's rowid. A virtual table cannot carry row-level security (SQLite has none anyway):
  every query of it is joined to `search_entries` and filtered by tenant in the repository.

| access pattern                                   | index                                  |
| ------------------------------------------------ | -------------------------------------- |
| one document's entry (the consumer's upsert)     | primary key (tenant_id, document_id)   |
| a tenant's / project's matches, newest first     | the full-text index, then primary key  |
|                                                  | or ix_search_entries_project           |
| a batch's entries (deleting a batch)             | ix_search_entries_batch                |
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0016_search"
down_revision: str | None = "0015_llm"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "search_entries"


def _id(name: str, *, nullable: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.String(40), nullable=nullable)


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.create_table(
        TABLE,
        _id("tenant_id"),
        _id("document_id"),
        _id("project_id", nullable=True),
        _id("batch_id"),
        _id("workflow_id", nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("fields", sa.JSON(), nullable=False),
        sa.Column("numbers", sa.JSON(), nullable=False),
        sa.Column("dates", sa.JSON(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "document_id", name="pk_search_entries"),
    )
    op.create_index(
        "ix_search_entries_project", TABLE, ["tenant_id", "project_id", "document_id"]
    )
    op.create_index("ix_search_entries_batch", TABLE, ["tenant_id", "batch_id"])
    if not postgres:
        op.execute(
            "CREATE VIRTUAL TABLE search_fts USING fts5("
            "body, tenant_id UNINDEXED, document_id UNINDEXED)"
        )
        return
    op.execute(
        f"CREATE INDEX ix_search_entries_body ON {TABLE} "
        "USING gin (to_tsvector('simple', body))"
    )
    for statement in rls_statements(TABLE):
        op.execute(statement)
    role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLE} TO {role}; END IF; END $$"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE search_fts")
    op.drop_table(TABLE)
