"""Envelope encryption of stored files: each tenant's data keys, wrapped by a KEK.

Revision ID: 0027_crypt
Revises: 0026_downstream_state
Create Date: 2026-12-02

`data_keys` holds one row per version of a tenant's data key: the key wrapped by a
key-encryption key (a local key file or AWS KMS, named by `kek_id`), never the key itself.
The active version seals new writes; retired ones still open the files sealed under them.

| access pattern                              | index                                      |
| ------------------------------------------- | ------------------------------------------ |
| one version of a tenant's key (a read)      | pk_data_keys (tenant_id, version)          |
| the tenant's active key (a write)           | uq_data_keys_active (tenant_id) where active |

Tenant data under row-level security, like every other table (0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from docflow.db import DEFAULT_APP_ROLE, check_role_name, rls_statements

revision: str = "0027_crypt"
down_revision: str | None = "0026_downstream_state"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "data_keys",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("wrapped_key", sa.LargeBinary(), nullable=False),
        sa.Column("kek_id", sa.String(300), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rewrapped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "version", name="pk_data_keys"),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], ondelete="CASCADE", name="fk_data_keys_tenants"
        ),
    )
    op.create_index(
        "uq_data_keys_active",
        "data_keys",
        ["tenant_id"],
        unique=True,
        sqlite_where=sa.text("state = 'active'"),
        postgresql_where=sa.text("state = 'active'"),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in rls_statements("data_keys"):
        op.execute(statement)
    role = check_role_name(context.config.attributes.get("app_role", DEFAULT_APP_ROLE))
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON data_keys TO {role}; END IF; END $$"
    )


def downgrade() -> None:
    op.drop_table("data_keys")
