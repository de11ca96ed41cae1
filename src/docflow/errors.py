"""Domain errors: an error code, an HTTP status and a human-readable message.

Services raise these; the HTTP layer renders them once as RFC 9457 problem+json.
"""

from __future__ import annotations

from typing import Any, TypeVar

UPLOAD_PATH = "/v1/uploads/"
"""The path prefix of upload URLs. What follows it is a signed token, a credential: error
answers and logs never echo it. Here, below every layer, so the HTTP edge that redacts it and
the uploads that build it share one value."""


class DomainError(Exception):
    """Base of every error a service may raise on purpose."""

    code = "error"
    status = 400
    title = "Bad request"

    def __init__(self, detail: str, *, field: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.extra = extra


class InvalidInput(DomainError):
    code = "invalid_input"
    status = 422
    title = "Invalid input"


class NotFound(DomainError):
    code = "not_found"
    status = 404
    title = "Not found"


T = TypeVar("T")


def get_one(found: T | None, what: str, *, field: str | None = None) -> T:
    """`found`, the result of a lookup; NotFound("<what> not found") when the lookup found
    nothing. Every lookup of the caller's tenant answers a missing id and another tenant's
    id alike (repositories filter by tenant), so the answer never tells the two apart."""
    if found is None:
        raise NotFound(f"{what} not found", field=field)
    return found


class Conflict(DomainError):
    code = "conflict"
    status = 409
    title = "Conflict"


class Unauthorized(DomainError):
    code = "unauthorized"
    status = 401
    title = "Unauthorized"


class Forbidden(DomainError):
    code = "forbidden"
    status = 403
    title = "Forbidden"


class TooManyRequests(DomainError):
    """Over a rate: the answer carries `headers` (`Retry-After`, `RateLimit-*`)."""

    code = "rate_limited"
    status = 429
    title = "Too many requests"

    def __init__(self, detail: str, *, headers: dict[str, str], **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.headers = headers


class LimitExceeded(DomainError):
    code = "limit_exceeded"
    status = 413
    title = "Limit exceeded"
