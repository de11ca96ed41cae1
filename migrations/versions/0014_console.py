"""Console sign-in: a user may have a password.

Revision ID: 0014_console
Revises: 0013_retention
Create Date: 2026-12-02

- `users.password_hash` (nullable): the user's console password as an argon2id hash (the
  encoded form holds its own parameters and salt); null for a user who cannot sign in with a
  password (API keys only).
- PostgreSQL: `docflow_user_sign_in(email)` returns the user's id and password hash, as signing
  in happens before the user has chosen (or been bound to) a tenant. Like the other directory
  lookups (0006) it returns the minimum, for one email.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| find a user by email (sign-in)                  | the unique index on users.email (0001)        |

`users` keeps its row-level security (0006): a new column changes nothing in its policies.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_console"
down_revision: str | None = "0013_retention"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SIGN_IN = """
CREATE FUNCTION docflow_user_sign_in(p_email text)
RETURNS TABLE (id text, password_hash text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$ SELECT u.id, u.password_hash FROM users u WHERE u.email = p_email $$
"""


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("password_hash", sa.String(200), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_SIGN_IN)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS docflow_user_sign_in(text)")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("password_hash")
