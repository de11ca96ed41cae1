"""CloudEvents 1.0 envelopes (JSON format) of docflow's events, and their versioned types.

Types are `docflow.<entity>.<what>.v<N>`; a change that removes or retypes a field of `data`
is a new type with the next version, with its own JSON Schema in `schemas/`. `data` carries
ids, the tenant, statuses, counts and an API path to the result: never file bytes, extracted
values, secrets or signed URLs.

Events sit below the domains and know none of them: the domain that makes a change builds its
event's `data` from its own rows (in its `events.py`) and writes it with `outbox.emit`. A new
event type is that function, its name here (and in `EVENT_TYPES`, which webhook endpoints
subscribe to) and its JSON Schema in `schemas/`, plus its entry in the tests' schema lock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

SPEC_VERSION = "1.0"
CONTENT_TYPE = "application/json"

DOCUMENT_COMPLETED = "docflow.document.completed.v1"
DOCUMENT_FAILED = "docflow.document.failed.v1"
DOCUMENT_NEEDS_REVIEW = "docflow.document.needs_review.v1"
DOCUMENT_REVIEWED = "docflow.document.reviewed.v1"
DOCUMENT_DOWNSTREAM_CHANGED = "docflow.document.downstream_changed.v1"
DOCUMENT_DELETED = "docflow.document.deleted.v1"
BATCH_COMPLETED = "docflow.batch.completed.v1"
BATCH_CANCELLED = "docflow.batch.cancelled.v1"
BATCH_DELETED = "docflow.batch.deleted.v1"
WORKFLOW_PUBLISHED = "docflow.workflow.published.v1"
WORKFLOW_TRUST_DRIFTED = "docflow.workflow.trust_drifted.v1"
LLM_BUDGET_WARNING = "docflow.tenant.llm_budget_warning.v1"
EVENT_TYPES = (
    DOCUMENT_COMPLETED,
    DOCUMENT_FAILED,
    DOCUMENT_NEEDS_REVIEW,
    DOCUMENT_REVIEWED,
    DOCUMENT_DOWNSTREAM_CHANGED,
    DOCUMENT_DELETED,
    BATCH_COMPLETED,
    BATCH_CANCELLED,
    BATCH_DELETED,
    WORKFLOW_PUBLISHED,
    WORKFLOW_TRUST_DRIFTED,
    LLM_BUDGET_WARNING,
)


def source_for(tenant_id: str) -> str:
    """The CloudEvents `source` of a tenant's events (a URI reference)."""
    return f"/docflow/tenants/{tenant_id}"


@dataclass(frozen=True, slots=True)
class Envelope:
    """One event as consumers and integrators see it (CloudEvents 1.0 attributes + `data`)."""

    id: str
    source: str
    type: str
    time: datetime
    subject: str
    data: dict[str, Any] = field(default_factory=dict)
    specversion: str = SPEC_VERSION
    datacontenttype: str = CONTENT_TYPE

    @property
    def tenant_id(self) -> str:
        """The tenant the event belongs to (always in `data`)."""
        return str(self.data["tenant_id"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: attribute order as in the specification, `time` in RFC 3339 UTC."""
        return {
            "specversion": self.specversion,
            "id": self.id,
            "source": self.source,
            "type": self.type,
            "time": self.time.isoformat().replace("+00:00", "Z"),
            "subject": self.subject,
            "datacontenttype": self.datacontenttype,
            "data": self.data,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Envelope:
        """The envelope of its JSON form (the inverse of `to_dict`)."""
        return cls(
            id=raw["id"],
            source=raw["source"],
            type=raw["type"],
            time=datetime.fromisoformat(raw["time"].replace("Z", "+00:00")),
            subject=raw["subject"],
            data=dict(raw["data"]),
            specversion=raw.get("specversion", SPEC_VERSION),
            datacontenttype=raw.get("datacontenttype", CONTENT_TYPE),
        )


@cache
def schema_for(event_type: str) -> dict[str, Any]:
    """The committed JSON Schema of `event_type` (`schemas/<type>.json`); KeyError if none."""
    path = resources.files("docflow.events").joinpath("schemas", f"{event_type}.json")
    if not path.is_file():
        raise KeyError(event_type)
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


@dataclass(frozen=True, slots=True)
class EventType:
    """One event type the outbox sends: its name, the entity and change it reports, its
    version and its committed JSON Schema (whose `$id` is the schema's URL)."""

    type: str
    entity: str
    change: str
    version: int
    description: str
    schema_url: str
    schema: dict[str, Any]


def event_types() -> list[EventType]:
    """Every type in `EVENT_TYPES`, in that order, with its schema."""
    found = []
    for name in EVENT_TYPES:
        _, entity, change, version = name.split(".")
        schema = schema_for(name)
        found.append(
            EventType(
                type=name,
                entity=entity,
                change=change,
                version=int(version.removeprefix("v")),
                description=str(schema.get("description", "")),
                schema_url=str(schema["$id"]),
                schema=schema,
            )
        )
    return found
