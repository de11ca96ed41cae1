"""Dead letters name their target: the webhook endpoint a dead delivery was for.

Revision ID: 0005_dead_letter_targets
Revises: 0004_webhooks
Create Date: 2026-11-29

A consumer may give up on an event for one of its targets only: the webhooks consumer delivers
each event to every matching endpoint, and a delivery that exhausts its attempts is a dead
letter of consumer `webhooks` for that endpoint. `target` is null for a letter about the whole
consumer, as before.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| the open dead letter of one (consumer, target,  | ix_event_dead_letters_target (tenant_id,      |
|   event): a redelivery of a dead delivery       |   consumer, target, event_id)                 |

`event_dead_letters` keeps its row-level security (0003): a new column and index change
nothing in its policies or grants, and the readiness function keeps counting every letter.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_dead_letter_targets"
down_revision: str | None = "0004_webhooks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("event_dead_letters", sa.Column("target", sa.String(80), nullable=True))
    op.create_index(
        "ix_event_dead_letters_target",
        "event_dead_letters",
        ["tenant_id", "consumer", "target", "event_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_event_dead_letters_target", table_name="event_dead_letters")
    with op.batch_alter_table("event_dead_letters") as batch:
        batch.drop_column("target")
