"""A tenant's status: `active`, or `suspended` with who suspended it, when and why.

Revision ID: 0012_tenant_status
Revises: 0011_lifecycle
Create Date: 2026-12-02

- `tenants.status` (`active` | `suspended`, CHECK `ck_tenants_status`, existing rows `active`),
  `suspended_at`, `suspended_by`, `suspend_reason` (null while active).
- PostgreSQL: `docflow_api_key_lookup` also returns the key's tenant's status, so
  authentication refuses a suspended tenant's keys in the same read.

On SQLite the columns are added in place (`ALTER TABLE ... ADD COLUMN`, the CHECK on the column
itself): rebuilding `tenants` would cascade-delete every row that refers to a tenant (foreign keys
are on, and cannot be turned off inside the migration's transaction).

`tenants` keeps its row-level security (0006): new columns change nothing in its policies or
grants. No new access pattern: the status is read with the tenant's row (by its primary key) or
with the key (by its unique prefix).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_tenant_status"
down_revision: str | None = "0011_lifecycle"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STATUSES = "status IN ('active', 'suspended')"

_LOOKUP_WITH_STATUS = """
CREATE FUNCTION docflow_api_key_lookup(p_prefix text)
RETURNS TABLE (tenant_id text, key_id text, key_hash text, scopes json,
               revoked boolean, last_used_at timestamptz, user_id text, role text,
               tenant_status text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT k.tenant_id, k.id, k.key_hash, k.scopes, k.revoked_at IS NOT NULL, k.last_used_at,
         k.user_id, m.role, t.status
  FROM api_keys k
  JOIN tenants t ON t.id = k.tenant_id
  LEFT JOIN memberships m ON m.tenant_id = k.tenant_id AND m.user_id = k.user_id
  WHERE k.prefix = p_prefix
$$
"""

# As 0007 left it.
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

_AUDIT_COLUMNS = (
    ("suspended_at", "DATETIME", sa.DateTime(timezone=True)),
    ("suspended_by", "VARCHAR(200)", sa.String(200)),
    ("suspend_reason", "VARCHAR(500)", sa.String(500)),
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        bind.exec_driver_sql(
            "ALTER TABLE tenants ADD COLUMN status VARCHAR(16) DEFAULT 'active' NOT NULL "
            f"CONSTRAINT ck_tenants_status CHECK ({_STATUSES})"
        )
        for name, sqlite_type, _ in _AUDIT_COLUMNS:
            bind.exec_driver_sql(f"ALTER TABLE tenants ADD COLUMN {name} {sqlite_type}")
        return
    op.add_column(
        "tenants", sa.Column("status", sa.String(16), nullable=False, server_default="active")
    )
    op.create_check_constraint(op.f("ck_tenants_status"), "tenants", _STATUSES)
    for name, _, column_type in _AUDIT_COLUMNS:
        op.add_column("tenants", sa.Column(name, column_type, nullable=True))
    op.execute("DROP FUNCTION docflow_api_key_lookup(text)")
    op.execute(_LOOKUP_WITH_STATUS)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for name, _, _ in reversed(_AUDIT_COLUMNS):
            bind.exec_driver_sql(f"ALTER TABLE tenants DROP COLUMN {name}")
        bind.exec_driver_sql("ALTER TABLE tenants DROP COLUMN status")
        return
    op.execute("DROP FUNCTION docflow_api_key_lookup(text)")
    op.execute(_LOOKUP_WITH_USER)
    for name, _, _ in reversed(_AUDIT_COLUMNS):
        op.drop_column("tenants", name)
    op.drop_constraint(op.f("ck_tenants_status"), "tenants", type_="check")
    op.drop_column("tenants", "status")
