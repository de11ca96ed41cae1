"""API key and user requests and answers."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from docflow.kit.inputs import Timestamp
from docflow.tenants.models import Membership

Role = Literal["admin", "reviewer", "viewer"]


class ApiKeyCreate(BaseModel):
    """A new API key for the calling tenant; its scopes may not exceed the caller's."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] | None = Field(
        default=None,
        description="default: the scopes of the key making the call (with `user_id`: those "
        "of them the user's role grants)",
    )
    user_id: str | None = Field(
        default=None,
        description="the member the key belongs to: its actions are theirs, and it may hold "
        "only scopes their role grants",
    )
    expires_at: Timestamp | None = Field(
        default=None,
        description="when the key stops working (in the future; with an offset); null: never. "
        "After it the key answers 401 `api_key_expired`",
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
    expires_at: datetime | None = Field(default=None, description="null: it never expires")
    user_id: str | None = Field(default=None, description="the member the key belongs to")


class ApiKeyCreated(ApiKeyRead):
    """A new API key with its secret, shown this once."""

    key: str | None = Field(
        description="the secret API key; null when this answer replays an earlier one "
        "(Idempotency-Key), since the secret is never stored"
    )


class ApiKeyList(BaseModel):
    """The tenant's API keys, revoked ones included."""

    items: list[ApiKeyRead]


class UserCreate(BaseModel):
    """A member to add by email: a new email adds the user to the directory first."""

    model_config = ConfigDict(extra="forbid")

    email: str = Field(min_length=1, max_length=320)
    name: str = Field(default="", max_length=200, description="kept only for a new user")
    role: Role = "viewer"


class InvitationRead(BaseModel):
    """A user of the directory invited to the tenant: they become a member once they accept it
    in the console. It shows only what the admin typed (no name, no other tenants)."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    email: str
    role: Role
    status: Literal["invited"] = "invited"
    invited_by: str
    created_at: datetime


class InvitationList(BaseModel):
    """The tenant's pending invitations, oldest first."""

    items: list[InvitationRead]


class UserUpdate(BaseModel):
    """A partial update of a member: omitted fields keep their value."""

    model_config = ConfigDict(extra="forbid")

    role: Role | None = None
    name: str | None = Field(
        default=None,
        max_length=200,
        description="the user's name in the directory, shown in every tenant they belong to: "
        "only the user changes it (a key of theirs); anyone else gets 403 `name_not_yours`",
    )

    @model_validator(mode="after")
    def _something(self) -> UserUpdate:
        if self.role is None and self.name is None:
            raise ValueError("send at least one of role, name")
        return self


class UserRead(BaseModel):
    """A member of the tenant: the user and their role here."""

    id: str
    email: str
    name: str
    role: Role
    scopes: list[str] = Field(description="the scopes the role grants a key of this user")
    status: Literal["active"] = "active"

    @classmethod
    def of(cls, member: Membership, scopes: tuple[str, ...]) -> UserRead:
        user = member.user
        return cls(
            id=user.id, email=user.email, name=user.name, role=member.role, scopes=list(scopes)
        )


class UserList(BaseModel):
    """A page of the tenant's members, by user id."""

    items: list[UserRead]
    next_cursor: str | None


class TenantRead(BaseModel):
    """A tenant of the directory, with its status (the operator's view)."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    plan: str
    status: Literal["active", "suspended"]
    created_at: datetime
    suspended_at: datetime | None = None
    suspended_by: str | None = None
    suspend_reason: str | None = None


class TenantShown(TenantRead):
    """A tenant and how many of its API keys are not revoked."""

    active_api_keys: int
