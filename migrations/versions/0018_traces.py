"""Traces: the W3C trace context a batch's execution and an event's consumers continue.

Revision ID: 0018_traces
Revises: 0017_quotas
Create Date: 2026-12-02

`batches.traceparent` is the context of the request that created the batch, and
`outbox_events.traceparent` that of the change that wrote the event (both NULL while traces are
off). Neither is read by any access pattern: no index.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_traces"
down_revision: str | None = "0017_quotas"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("batches", "outbox_events")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("traceparent", sa.String(55), nullable=True))


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("traceparent")
