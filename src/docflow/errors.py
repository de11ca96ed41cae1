"""Domain errors: an error code, an HTTP status and a human-readable message.

Services raise these; the HTTP layer renders them once as RFC 9457 problem+json.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def field_path(loc: Sequence[int | str], document: Any) -> str:
    """A pydantic error location inside `document` (the JSON or YAML a client sent) as the
    field's path there, the one form every error names a field in: names joined by "." and
    list items by their index, `("documents", 0, "size")` -> `documents.0.size`.

    The tags pydantic inserts for a discriminated union (a locator's `kind`: `label`,
    `pattern`, `region`) are not in the document and are dropped: `fields.1.locators.0.pattern`.
    """
    parts: list[str] = []
    node: Any = document
    tagged: Any = None  # the union member whose discriminator tag was already passed
    for item in loc:
        if isinstance(item, int):
            parts.append(str(item))
            node = node[item] if isinstance(node, list) and 0 <= item < len(node) else None
            continue
        if isinstance(node, dict) and node is not tagged and node.get("kind") == item:
            tagged = node
            continue
        parts.append(item)
        node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts)


def describe(detail: str, *, code: str | None = None, field: str | None = None) -> str:
    """An error as the command line prints it: `<detail> (<code>, field <path>)`, the field
    named by its path in the API's form (`documents.3.name`, `fields.2.type`: the `field` of
    a problem's `errors[]`), for an error of the API and a command's own alike."""
    where = [part for part in (code, f"field {field}" if field else None) if part]
    return f"{detail} ({', '.join(where)})" if where else detail


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
