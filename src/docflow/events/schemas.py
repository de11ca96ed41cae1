"""Dead-letter answers (the event types' JSON Schemas are the files under `schemas/`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel


class DeadLetterRead(BaseModel):
    """An event a consumer gave up on; `target` is the webhook endpoint (`whe_...`) of a dead
    webhook delivery (consumer `webhooks`), null when the consumer as a whole gave up."""

    id: str
    consumer: str
    target: str | None
    event_id: str
    event_type: str
    error: str
    category: str
    attempts: int
    created_at: datetime
    redriven_at: datetime | None
    redriven_by: str | None
    redrive_reason: str | None
    envelope: dict[str, Any]


class DeadLetterList(BaseModel):
    items: list[DeadLetterRead]
