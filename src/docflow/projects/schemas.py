"""Project requests and answers."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

RETENTION = (
    "delete the project's finished batches (documents, files, results, reviews) this many "
    "days after their creation; null keeps them"
)


class ProjectCreate(BaseModel):
    """A new project."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=2000)
    retention_days: int | None = Field(default=None, ge=1, le=36500, description=RETENTION)


class ProjectUpdate(BaseModel):
    """A partial update: omitted fields keep their value."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    retention_days: int | None = Field(
        default=None, ge=1, le=36500, description=RETENTION + "; send null to keep them forever"
    )

    @model_validator(mode="after")
    def _something(self) -> ProjectUpdate:
        if self.name is None and self.description is None and not self.sets_retention:
            raise ValueError("send at least one of name, description, retention_days")
        return self

    @property
    def sets_retention(self) -> bool:
        """Whether `retention_days` was sent (null included)."""
        return "retention_days" in self.model_fields_set


class ProjectRead(BaseModel):
    """A project and its counters."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    description: str
    batch_count: int
    document_count: int
    retention_days: int | None = Field(description=RETENTION)
    created_at: datetime
    updated_at: datetime


class ProjectList(BaseModel):
    """A page of projects."""

    items: list[ProjectRead]
    next_cursor: str | None
