"""Lifecycle: cancelled batches and documents, batch filters, and what deleting a batch reads.

Revision ID: 0011_lifecycle
Revises: 0010_evaluate
Create Date: 2026-12-01

`CANCELLED` joins the statuses of `batches` and `documents` (their CHECK constraints), and
`batches.cancelled_count` counts a batch's documents ended by `POST /v1/batches/{id}/cancel`.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| a tenant's batches of a project, by date        | ix_batches_project_created (tenant_id,        |
|   (the listing's filter; deleting a project)    |   project_id, created_at, id)                 |
| a tenant's batches of a workflow, by date       | ix_batches_workflow_created (tenant_id,       |
|                                                 |   workflow_id, created_at, id)                |
| the re-runs of an upload (is its stored file    | ix_documents_source (tenant_id,               |
|   still referenced when a batch is deleted?)    |   source_document_id)                         |

On SQLite a CHECK constraint cannot be altered, and rebuilding `batches` would cascade-delete
every document (foreign keys are on, and cannot be turned off inside the migration's
transaction). Widening an `IN (...)` list changes no stored row, so the table's recorded SQL is
rewritten in place, the procedure SQLite documents for constraint changes that leave the
stored data valid (`writable_schema`, then a new schema version). The downgrade ends
cancelled rows FAILED (code `cancelled`) before narrowing the lists again.

Both tables keep their row-level security (0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_lifecycle"
down_revision: str | None = "0010_evaluate"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = "'CREATED', 'PROCESSING', 'SUCCEEDED', 'REVIEW_REQUIRED', 'PARTIALLY_FAILED', 'FAILED'"
_DOCUMENT = "'PENDING_UPLOAD', 'UPLOADED', 'PROCESSING', 'SUCCEEDED', 'REVIEW_REQUIRED', 'FAILED'"
_STATUSES = {"batches": _BATCH, "documents": _DOCUMENT}


def _set_check(table: str, statuses: str) -> None:
    """Make `ck_<table>_status` read `status IN (<statuses>)`."""
    name = f"ck_{table}_status"
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_constraint(op.f(name), table, type_="check")
        op.create_check_constraint(op.f(name), table, f"status IN ({statuses})")
        return
    sql = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).scalar_one()
    start = sql.index(f"CONSTRAINT {name} CHECK (")
    end = sql.index(")", sql.index("IN (", start)) + 1
    rewritten = f"{sql[:start]}CONSTRAINT {name} CHECK (status IN ({statuses})){sql[end + 1 :]}"
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    bind.exec_driver_sql(
        "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (rewritten, table)
    )
    bind.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    bind.exec_driver_sql("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    for table, statuses in _STATUSES.items():
        _set_check(table, f"{statuses}, 'CANCELLED'")
    op.add_column(
        "batches",
        sa.Column("cancelled_count", sa.Integer(), nullable=False, server_default="0"),
    )
    op.create_index(
        "ix_batches_project_created", "batches", ["tenant_id", "project_id", "created_at", "id"]
    )
    op.create_index(
        "ix_batches_workflow_created", "batches", ["tenant_id", "workflow_id", "created_at", "id"]
    )
    op.create_index("ix_documents_source", "documents", ["tenant_id", "source_document_id"])


def downgrade() -> None:
    op.drop_index("ix_documents_source", table_name="documents")
    op.drop_index("ix_batches_workflow_created", table_name="batches")
    op.drop_index("ix_batches_project_created", table_name="batches")
    op.execute(
        "UPDATE documents SET status = 'FAILED', error_code = 'cancelled' "
        "WHERE status = 'CANCELLED'"
    )
    op.execute("UPDATE batches SET status = 'FAILED' WHERE status = 'CANCELLED'")
    with op.batch_alter_table("batches", recreate="never") as batch:
        batch.drop_column("cancelled_count")
    for table, statuses in _STATUSES.items():
        _set_check(table, statuses)
