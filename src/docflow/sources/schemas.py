"""Source requests and answers."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

PATH = (
    "the folder to watch, relative to the tenant's directory under the server's sources root "
    "(no absolute path, no `..`)"
)
CRON = (
    "when to poll: 5 fields (`min hour day month weekday`) or 6 with seconds first; met at the "
    "server's tick granularity"
)
MOVE_AFTER = "move each file to `processed/` or `failed/` (by its document's outcome) once done"


class SourceCreate(BaseModel):
    """A new source of the project."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=1000, description=PATH)
    workflow_id: str = Field(min_length=1, max_length=40)
    cron: str = Field(min_length=1, max_length=120, description=CRON)
    move_after: bool = Field(default=False, description=MOVE_AFTER)
    paused: bool = False


class SourceUpdate(BaseModel):
    """A partial update: omitted fields keep their value."""

    model_config = ConfigDict(extra="forbid")

    paused: bool | None = None
    cron: str | None = Field(default=None, min_length=1, max_length=120, description=CRON)
    workflow_id: str | None = Field(default=None, min_length=1, max_length=40)
    move_after: bool | None = Field(default=None, description=MOVE_AFTER)


class SourceRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    project_id: str
    workflow_id: str
    path: str
    cron: str
    move_after: bool
    paused: bool
    healthy: bool
    last_error: str | None
    next_poll_at: datetime | None
    last_poll_at: datetime | None
    created_at: datetime
    updated_at: datetime


class SourceList(BaseModel):
    items: list[SourceRead]


class SourceRunRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    source_id: str
    started_at: datetime
    files_seen: int
    files_taken: int
    files_skipped: int
    batch_id: str | None
    error: str | None


class SourceRunList(BaseModel):
    items: list[SourceRunRead]
    next_cursor: str | None


class PollAccepted(BaseModel):
    run_id: str = Field(description="the id of the poll's run, listed with the source's runs")
