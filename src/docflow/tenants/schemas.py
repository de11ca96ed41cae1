"""API key requests and answers."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class ApiKeyCreate(BaseModel):
    """A new API key for the calling tenant; its scopes may not exceed the caller's."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] | None = Field(
        default=None, description="default: the scopes of the key making the call"
    )


class ApiKeyRead(BaseModel):
    """An API key as stored: its prefix identifies it, the secret is never shown again."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    prefix: str
    scopes: list[str]
    created_at: datetime
    revoked_at: datetime | None = None


class ApiKeyCreated(ApiKeyRead):
    """A new API key with its secret, shown this once."""

    key: str | None = Field(
        description="the secret API key; null when this answer replays an earlier one "
        "(Idempotency-Key), since the secret is never stored"
    )


class ApiKeyList(BaseModel):
    """The tenant's API keys, revoked ones included."""

    items: list[ApiKeyRead]
