"""Search on PostgreSQL: a stored tsvector of each entry's body, the GIN index on it.

Revision ID: 0022_projections
Revises: 0021_sources
Create Date: 2026-12-02

Until now the GIN index was an expression index over `to_tsvector('simple', body)`: a word
matching many entries made PostgreSQL recompute the vector of every candidate's body for the
recheck. `search_entries.body_vector` is a generated column (STORED, always
`to_tsvector('simple', body)`, so no writer maintains it) and `ix_search_entries_body` is now
the GIN index on it; the search matches against the column. Adding the column rewrites the
table once (every existing entry gets its vector). SQLite is unchanged (FTS5).

| access pattern                           | index                                         |
| ---------------------------------------- | --------------------------------------------- |
| a tenant's / project's matches of words  | ix_search_entries_body (gin (body_vector))    |
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0022_projections"
down_revision: str | None = "0021_sources"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "ALTER TABLE search_entries ADD COLUMN body_vector tsvector "
        "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, body)) STORED"
    )
    op.execute("DROP INDEX ix_search_entries_body")
    op.execute("CREATE INDEX ix_search_entries_body ON search_entries USING gin (body_vector)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX ix_search_entries_body")
    op.execute("ALTER TABLE search_entries DROP COLUMN body_vector")
    op.execute(
        "CREATE INDEX ix_search_entries_body ON search_entries "
        "USING gin (to_tsvector('simple', body))"
    )
