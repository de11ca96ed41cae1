"""Console accounts: sign-in throttles, a session epoch per user, and invitations.

Revision ID: 0030_console_accounts
Revises: 0029_event_deletion
Create Date: 2026-12-06

- `sign_in_throttles`: failed password sign-ins counted per key (`account:`, `address:` and
  `pair:` followed by a SHA-256 of the email, the client address or both), the window they fall
  in, and until when the key is locked (`tenants.throttle`). Kept in the database so every API
  process sees the same counts. It holds no tenant data and is read before any tenant is known:
  no row-level security (docs/architecture.md, "Tenant isolation").
- `users.session_epoch`: signed into every console session; signing out, a new password and a
  released issuer binding add one, so a copy of an earlier session cookie is refused.
- `invitations`: an existing user invited to a tenant (tenant data, keyed by tenant, row-level
  security, deleted with its tenant or its user). The user accepts or declines it in the
  console; accepting makes the membership.
- PostgreSQL: `docflow_user_lookup` also returns the session epoch;
  `docflow_user_end_sessions(user)` adds one to it (signing out happens before, or without, a
  tenant); `docflow_user_tenants(user)` returns the user's tenants with their names and roles
  (the console's tenant choice); `docflow_user_invitations(user)` returns the user's pending
  invitations with the inviting tenant's name.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| a sign-in's throttle counters                   | pk_sign_in_throttles (key)                    |
| a tenant's member by email                      | uq_users_email, then pk_memberships           |
| a tenant's invitations, by id                   | pk_invitations (tenant_id, id)                |
| a tenant's invitation of a user                 | uq_invitations_tenant_id_user_id              |
| a user's pending invitations                    | ix_invitations_user_id (user_id)              |
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from docflow.db import rls_statements

revision: str = "0030_console_accounts"
down_revision: str | None = "0029_event_deletion"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LOOKUP_OLD = """
CREATE FUNCTION docflow_user_lookup(p_email text, p_id text)
RETURNS TABLE (id text, email text, name text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
  SELECT u.id, u.email, u.name FROM users u WHERE u.email = p_email OR u.id = p_id LIMIT 1
$$
"""

_POSTGRES = (
    "DROP FUNCTION docflow_user_lookup(text, text)",
    """
    CREATE FUNCTION docflow_user_lookup(p_email text, p_id text)
    RETURNS TABLE (id text, email text, name text, session_epoch integer)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT u.id, u.email, u.name, u.session_epoch FROM users u
      WHERE u.email = p_email OR u.id = p_id LIMIT 1
    $$
    """,
    # The functions' owner reads every user already (0006); it may also end their sessions.
    "CREATE POLICY owner_sessions ON users FOR UPDATE TO CURRENT_USER USING (true) "
    "WITH CHECK (true)",
    """
    CREATE FUNCTION docflow_user_end_sessions(p_user_id text) RETURNS integer
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      UPDATE users SET session_epoch = session_epoch + 1 WHERE id = p_user_id
      RETURNING session_epoch
    $$
    """,
    """
    CREATE FUNCTION docflow_user_tenants(p_user_id text)
    RETURNS TABLE (tenant_id text, name text, role text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT m.tenant_id, t.name, m.role FROM memberships m JOIN tenants t ON t.id = m.tenant_id
      WHERE m.user_id = p_user_id ORDER BY m.tenant_id
    $$
    """,
    *rls_statements("invitations"),
    "CREATE POLICY owner_lookup ON invitations FOR SELECT TO CURRENT_USER USING (true)",
    """
    CREATE FUNCTION docflow_user_invitations(p_user_id text)
    RETURNS TABLE (tenant_id text, id text, tenant_name text, role text,
                   created_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
      SELECT i.tenant_id, i.id, t.name, i.role, i.created_at
      FROM invitations i JOIN tenants t ON t.id = i.tenant_id
      WHERE i.user_id = p_user_id ORDER BY i.tenant_id, i.id
    $$
    """,
)


def upgrade() -> None:
    op.create_table(
        "sign_in_throttles",
        sa.Column("key", sa.String(80), primary_key=True),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("window_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locks", sa.Integer, nullable=False, server_default="0"),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
    )
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("session_epoch", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "invitations",
        sa.Column(
            "tenant_id",
            sa.String(40),
            sa.ForeignKey("tenants.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "user_id", sa.String(40), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("invited_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("tenant_id", "user_id", name="uq_invitations_tenant_id_user_id"),
    )
    op.create_index("ix_invitations_user_id", "invitations", ["user_id"])
    if op.get_bind().dialect.name == "postgresql":
        for statement in _POSTGRES:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for function in (
            "docflow_user_invitations(text)",
            "docflow_user_tenants(text)",
            "docflow_user_end_sessions(text)",
            "docflow_user_lookup(text, text)",
        ):
            op.execute(f"DROP FUNCTION IF EXISTS {function}")
        op.execute(_LOOKUP_OLD)
        op.execute("DROP POLICY IF EXISTS owner_sessions ON users")
    op.drop_table("invitations")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("session_epoch")
    op.drop_table("sign_in_throttles")
