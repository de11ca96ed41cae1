"""`GET /v1/dead-letters`: the calling tenant's dead letters, with their redrive audit;
`GET /v1/event-types`: the event types the outbox sends, with their JSON Schemas."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from docflow.events import envelopes, service
from docflow.events.schemas import DeadLetterList, DeadLetterRead
from docflow.http.deps import SessionDep, TenantDep, require_scope
from docflow.kit.inputs import Timestamp

router = APIRouter(tags=["events"], dependencies=[Depends(require_scope())])


@router.get("/dead-letters", response_model=DeadLetterList)
def list_dead_letters(
    session: SessionDep,
    tenant: TenantDep,
    consumer: str | None = None,
    target: str | None = None,
    category: str | None = None,
    since: Timestamp | None = None,
    until: Timestamp | None = None,
    limit: int = Query(default=100, ge=1, le=service.MAX_LIST),
) -> DeadLetterList:
    """Events a consumer gave up on, newest first, by consumer, target, category and time."""
    # Redriven letters stay listed with who redrove them, when and why (the audit).
    letters = service.list_dead_letters(
        session,
        tenant,
        consumer=consumer,
        target=target,
        category=category,
        since=since,
        until=until,
        limit=limit,
    )
    return DeadLetterList(
        items=[DeadLetterRead.model_validate(letter, from_attributes=True) for letter in letters]
    )


class EventTypeRead(BaseModel):
    """An event type: `docflow.<entity>.<change>.v<version>`, and the JSON Schema of its
    CloudEvents envelope (its `$id` is `schema_url`)."""

    model_config = ConfigDict(from_attributes=True)

    type: str
    entity: str
    change: str
    version: int
    description: str
    schema_url: str
    json_schema: dict[str, Any] = Field(
        validation_alias="schema", description="the envelope's JSON Schema (draft 2020-12)"
    )


class EventTypeList(BaseModel):
    items: list[EventTypeRead]


@router.get("/event-types", response_model=EventTypeList)
def list_event_types() -> EventTypeList:
    """The event types webhooks and consumers receive, each with its version and JSON Schema."""
    # A change that removes or retypes a field is a new type with the next version; both are
    # listed while both are sent. Webhook endpoints subscribe to these names.
    return EventTypeList(items=[EventTypeRead.model_validate(t) for t in envelopes.event_types()])
