"""Webhook endpoint requests and answers, and the delivery log."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from docflow.events.envelopes import EVENT_TYPES
from docflow.kit.inputs import Flag
from docflow.webhooks.service import DeliveryLogEntry


class EndpointCreate(BaseModel):
    """A new endpoint of a project. An empty `event_types` receives every event type."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2000, description="http(s) URL receiving POSTs")
    event_types: list[str] = Field(
        default_factory=list,
        max_length=50,
        description=f"event types to receive, of {', '.join(EVENT_TYPES)}; empty: all",
    )
    description: str = Field(default="", max_length=500)


class EndpointUpdate(BaseModel):
    """A partial update: omitted fields keep their value. `enabled: true` re-enables an
    endpoint that was disabled (for instance after a 410 Gone)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, min_length=1, max_length=2000)
    event_types: list[str] | None = Field(default=None, max_length=50)
    description: str | None = Field(default=None, max_length=500)
    enabled: Flag | None = None

    @model_validator(mode="after")
    def _something(self) -> EndpointUpdate:
        if all(v is None for v in (self.url, self.event_types, self.description, self.enabled)):
            raise ValueError("send at least one of url, event_types, description, enabled")
        return self


class EndpointRead(BaseModel):
    """An endpoint (its secret is shown only in the answer that created it)."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    project_id: str
    url: str
    description: str
    event_types: list[str]
    enabled: bool
    disabled_reason: str | None
    created_at: datetime
    updated_at: datetime


class EndpointCreated(EndpointRead):
    """The new endpoint and its signing secret `whsec_...`: store it now, it is never shown
    again (a replay of the creating request answers null in its place)."""

    secret: str | None


class EndpointList(BaseModel):
    """A page of endpoints."""

    items: list[EndpointRead]
    next_cursor: str | None


class AttemptRead(BaseModel):
    """One attempt: the status code (null when no answer came), latency, error, next retry."""

    model_config = ConfigDict(from_attributes=True)

    attempt: int
    status_code: int | None
    latency_ms: int
    error: str | None
    attempted_at: datetime
    next_retry_at: datetime | None


class DeliveryRead(BaseModel):
    """One event's delivery to the endpoint: PENDING, DELIVERED, DEAD or SKIPPED."""

    id: str
    event_id: str
    event_type: str
    status: str
    attempts: list[AttemptRead]
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, entry: DeliveryLogEntry) -> DeliveryRead:
        d = entry.delivery
        return cls(
            id=d.id,
            event_id=d.event_id,
            event_type=d.event_type,
            status=d.status,
            attempts=[AttemptRead.model_validate(a) for a in entry.attempts],
            last_status_code=d.last_status_code,
            last_error=d.last_error,
            next_attempt_at=d.next_attempt_at,
            created_at=d.created_at,
            updated_at=d.updated_at,
        )


class DeliveryList(BaseModel):
    """A page of an endpoint's delivery log, newest first."""

    items: list[DeliveryRead]
    next_cursor: str | None
