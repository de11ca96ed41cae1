"""Console sign-in through OpenID Connect: a user may be bound to an issuer's subject.

Revision ID: 0025_oidc
Revises: 0024_publisher
Create Date: 2026-12-02

- `users.oidc_issuer`, `users.oidc_subject` (nullable, set together): the identity (`iss`,
  `sub`) that signed the user in through OpenID Connect the first time (`docflow.web.oidc`);
  later sign-ins find the user by it, whatever email the issuer sends then. Unique together
  (`ux_users_oidc`): one identity is one user.
- PostgreSQL: `docflow_user_oidc(issuer, subject, email)` returns the id and binding of the
  user bound to that identity and of the user with that email (at most two rows), as signing
  in happens before the user has chosen a tenant. Binding is written through a membership of
  the user, as row-level security has it (0006).

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| find a user by their issuer's subject (sign-in) | ux_users_oidc (oidc_issuer, oidc_subject)     |
| find a user by email (first sign-in)            | the unique index on users.email (0001)        |
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025_oidc"
down_revision: str | None = "0024_publisher"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LOOKUP = """
CREATE FUNCTION docflow_user_oidc(p_issuer text, p_subject text, p_email text)
RETURNS TABLE (id text, oidc_issuer text, oidc_subject text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT u.id, u.oidc_issuer, u.oidc_subject FROM users u
  WHERE (u.oidc_issuer = p_issuer AND u.oidc_subject = p_subject) OR u.email = p_email
  LIMIT 2
$$
"""


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("oidc_issuer", sa.String(500), nullable=True))
        batch.add_column(sa.Column("oidc_subject", sa.String(255), nullable=True))
        batch.create_index("ux_users_oidc", ["oidc_issuer", "oidc_subject"], unique=True)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_LOOKUP)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS docflow_user_oidc(text, text, text)")
    with op.batch_alter_table("users") as batch:
        batch.drop_index("ux_users_oidc")
        batch.drop_column("oidc_subject")
        batch.drop_column("oidc_issuer")
