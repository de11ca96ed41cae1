"""Dead letters are found by their event: they go with a deleted batch's events.

Revision ID: 0029_event_deletion
Revises: 0028_source_stat
Create Date: 2026-12-02

Deleting a batch deletes the events about it and its documents, and with them the dead letters
naming those events (`batches.lifecycle`). The outbox finds the events by subject
(ix_outbox_events_subject) and the webhook deliveries by event (ix_webhook_deliveries_event);
the dead letters had no index leading with the event.

| access pattern                                  | index                                         |
| ----------------------------------------------- | --------------------------------------------- |
| the dead letters of given events (a deletion)   | ix_event_dead_letters_event (tenant_id,       |
|                                                 |   event_id)                                   |

A new index changes nothing in `event_dead_letters`' row-level security, policies or grants.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0029_event_deletion"
down_revision: str | None = "0028_source_stat"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_event_dead_letters_event", "event_dead_letters", ["tenant_id", "event_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_event_dead_letters_event", table_name="event_dead_letters")
