"""Users and roles of a tenant: the roles `admin`, `reviewer`, `viewer`; an API key may belong
to a member.

Revision ID: 0007_users
Revises: 0006_directory_rls
Create Date: 2026-12-01

- `memberships.role`: the roles are now `admin`, `reviewer` and `viewer`. Existing rows of the
  earlier roles become: `owner` -> `admin`; `member` -> `reviewer` (it may read and review but
  not change data: a member is never given more than it had; an admin raises it if needed).
- `api_keys.user_id` (nullable): the user a key belongs to, a member of the key's tenant. A key
  whose user leaves the tenant is revoked by the service (its row stays, naming the user, for
  the record); a user deleted from the directory takes their keys with them (ON DELETE CASCADE).
- PostgreSQL: `docflow_api_key_lookup` also returns the key's user and that user's role in the
  key's tenant (null when the user is no longer a member), so authentication narrows a key's
  scopes to its user's role in the same read.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| members of a tenant, by user id                 | pk_memberships (tenant_id, user_id)           |
| a member's API keys (revoked when they leave)   | ix_api_keys_user_id (tenant_id, user_id, id)  |

`api_keys` keeps its row-level security (0001): a new column changes nothing in its policies or
grants.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_users"
down_revision: str | None = "0006_directory_rls"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LOOKUP_WITH_USER = """
CREATE FUNCTION docflow_api_key_lookup(p_prefix text)
RETURNS TABLE (tenant_id text, key_id text, key_hash text, scopes json,
               revoked boolean, last_used_at timestamptz, user_id text, role text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT k.tenant_id, k.id, k.key_hash, k.scopes, k.revoked_at IS NOT NULL, k.last_used_at,
         k.user_id, m.role
  FROM api_keys k
  LEFT JOIN memberships m ON m.tenant_id = k.tenant_id AND m.user_id = k.user_id
  WHERE k.prefix = p_prefix
$$
"""

_LOOKUP_WITHOUT_USER = """
CREATE FUNCTION docflow_api_key_lookup(p_prefix text)
RETURNS TABLE (tenant_id text, key_id text, key_hash text, scopes json,
               revoked boolean, last_used_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT k.tenant_id, k.id, k.key_hash, k.scopes, k.revoked_at IS NOT NULL, k.last_used_at
  FROM api_keys k WHERE k.prefix = p_prefix
$$
"""


def upgrade() -> None:
    op.execute("UPDATE memberships SET role = 'admin' WHERE role = 'owner'")
    op.execute("UPDATE memberships SET role = 'reviewer' WHERE role = 'member'")
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("user_id", sa.String(40), nullable=True))
        batch.create_foreign_key(
            "fk_api_keys_users", "users", ["user_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_index("ix_api_keys_user_id", ["tenant_id", "user_id", "id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION docflow_api_key_lookup(text)")
        op.execute(_LOOKUP_WITH_USER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION docflow_api_key_lookup(text)")
        op.execute(_LOOKUP_WITHOUT_USER)
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_index("ix_api_keys_user_id")
        batch.drop_constraint("fk_api_keys_users", type_="foreignkey")
        batch.drop_column("user_id")
    op.execute("UPDATE memberships SET role = 'member' WHERE role = 'reviewer'")
