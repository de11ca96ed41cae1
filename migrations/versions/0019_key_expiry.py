"""API keys that expire: `api_keys.expires_at` (null: never).

Revision ID: 0019_key_expiry
Revises: 0018_traces
Create Date: 2026-12-02

- PostgreSQL: `docflow_api_key_lookup` also returns the key's expiry, so authentication refuses
  an expired key (401 `api_key_expired`) in the same read.

No new access pattern: the expiry is read with the key (by its unique prefix). `api_keys` keeps
its row-level security (0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_key_expiry"
down_revision: str | None = "0018_traces"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _lookup(expiry: bool) -> str:
    returns = ", expires_at timestamptz" if expiry else ""
    selects = ", k.expires_at" if expiry else ""
    return f"""
CREATE FUNCTION docflow_api_key_lookup(p_prefix text)
RETURNS TABLE (tenant_id text, key_id text, key_hash text, scopes json,
               revoked boolean, last_used_at timestamptz, user_id text, role text,
               tenant_status text{returns})
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT k.tenant_id, k.id, k.key_hash, k.scopes, k.revoked_at IS NOT NULL, k.last_used_at,
         k.user_id, m.role, t.status{selects}
  FROM api_keys k
  JOIN tenants t ON t.id = k.tenant_id
  LEFT JOIN memberships m ON m.tenant_id = k.tenant_id AND m.user_id = k.user_id
  WHERE k.prefix = p_prefix
$$
"""


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION docflow_api_key_lookup(text)")
        op.execute(_lookup(expiry=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION docflow_api_key_lookup(text)")
        op.execute(_lookup(expiry=False))
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("expires_at")
