"""The directory under row-level security: a tenant sees its own `tenants` row and its members.

Revision ID: 0006_directory_rls
Revises: 0005_dead_letter_targets
Create Date: 2026-12-01

`tenants` (a tenant's name and plan) and `users` (emails and names) carry no tenant column, and
the application role could read every row of both. Now (PostgreSQL only):
- `tenants`: the policy `id = current_setting('app.tenant_id', true)` for reads and writes (a new
  tenant is written by a session bound to its own id).
- `users`: a user is visible, and changeable, through a membership of the bound tenant (the
  subquery meets `memberships`' own policy); anyone may add a user (one exists before joining a
  tenant), which the application role then cannot read back until it is a member.
Lookups that must cross tenants return the minimum through SECURITY DEFINER functions:
`docflow_tenant_ids()` (the hourly sweeps visit every tenant: ids only) and
`docflow_user_lookup(email, id)` (sign-in and adding a member happen before the user belongs to
the tenant: the user's id, email and name). The owner gets SELECT-only policies on both tables so
those functions read them when it is not a superuser.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from docflow.db import rls_statements

revision: str = "0006_directory_rls"
down_revision: str | None = "0005_dead_letter_targets"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MEMBER = "EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = users.id)"

_STATEMENTS = (
    *rls_statements("tenants", tenant_column="id"),
    "ALTER TABLE users ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE users FORCE ROW LEVEL SECURITY",
    f"CREATE POLICY tenant_members ON users USING ({_MEMBER}) WITH CHECK ({_MEMBER})",
    "CREATE POLICY new_users ON users FOR INSERT WITH CHECK (true)",
    "CREATE POLICY owner_lookup ON tenants FOR SELECT TO CURRENT_USER USING (true)",
    "CREATE POLICY owner_lookup ON users FOR SELECT TO CURRENT_USER USING (true)",
    """
    CREATE FUNCTION docflow_tenant_ids() RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT t.id FROM tenants t ORDER BY t.id $$
    """,
    """
    CREATE FUNCTION docflow_user_lookup(p_email text, p_id text)
    RETURNS TABLE (id text, email text, name text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT u.id, u.email, u.name FROM users u WHERE u.email = p_email OR u.id = p_id LIMIT 1
    $$
    """,
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in _STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION IF EXISTS docflow_user_lookup(text, text)")
    op.execute("DROP FUNCTION IF EXISTS docflow_tenant_ids()")
    for table, policies in (
        ("users", ("owner_lookup", "new_users", "tenant_members")),
        ("tenants", ("owner_lookup", "tenant_isolation")),
    ):
        for policy in policies:
            op.execute(f"DROP POLICY IF EXISTS {policy} ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
