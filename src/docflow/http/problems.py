"""RFC 9457 problem+json rendering, done once for every error the API can answer.

Every error body has the same shape: `type`, `title`, `status`, `detail`, `code` (stable, for
programs), `instance` (the request path, left out when the path carries a credential, as
`docflow.kit.redaction` finds them: an upload URL's signed token) and `errors` (a list of
`{field, message}`, empty when no single field is at fault). Domain errors carry their code
and status (`docflow.errors`), and may add extension members (RFC 9457 section 3.2, e.g.
`max_bytes` on a 413).

Fields are named one way everywhere, by request validation and by the services' own checks
alike: the field's path in the JSON the client sent, names joined by "." and list items by their
index (`documents.0.size`, `fields.1.locators.0.pattern`), the form of pydantic's error
locations; a query parameter or header by its name (`limit`, `Idempotency-Key`). An index, unlike
an item's name (two documents may share one), always maps back to exactly one item.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from enum import Enum
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from docflow import db
from docflow.errors import DomainError, field_path
from docflow.kit.redaction import redact_url

log = structlog.get_logger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"
AUTHENTICATE_HEADER = 'Bearer realm="docflow"'

_STATUS_CODES = {
    401: ("unauthorized", "Unauthorized"),
    403: ("forbidden", "Forbidden"),
    404: ("not_found", "Not found"),
    405: ("method_not_allowed", "Method not allowed"),
    406: ("not_acceptable", "Not acceptable"),
    409: ("conflict", "Conflict"),
    413: ("limit_exceeded", "Limit exceeded"),
    415: ("unsupported_media_type", "Unsupported media type"),
    422: ("invalid_input", "Invalid input"),
    429: ("too_many_requests", "Too many requests"),
}


class FieldError(BaseModel):
    """One field at fault: its path in the request and what is wrong with it."""

    field: str
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem document; some problems add extension members (e.g. `max_bytes`)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    code: str
    instance: str | None = None
    errors: list[FieldError] = []


# RFC 9457 section 3.2: extension member names start with a letter and hold only letters,
# digits and "_", at least three characters, so every client can use them as identifiers.
_EXTENSION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
_STANDARD_MEMBERS = frozenset(Problem.model_fields)


class _NotJson(Exception):
    pass


def request_instance(request: Request) -> str | None:
    """The `instance` of a problem about `request`: its path (never the query), or None when the
    path carries a credential (`/v1/uploads/{token}`), which must not be echoed to whoever reads
    the error (client logs, error trackers, proxies) nor written to our own logs."""
    path = request.url.path
    return path if redact_url(path) == path else None


def _log_path(request: Request) -> str:
    return redact_url(request.url.path)


def problem_type(code: str) -> str:
    """The stable `type` URI of an error code."""
    return f"urn:docflow:problem:{code}"


def extension_members(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The extension members to add to a problem, from a domain error's `extra`.

    A member that would replace a standard one (`status`, `detail`, ...), whose name is not a
    valid extension name, or whose value is not plain data (JSON scalars, lists, string-keyed
    mappings, datetimes, dates, enums) is left out and logged by name only: an error answer
    never fails, never changes the standard members, and never serialises an arbitrary object.
    """
    members: dict[str, Any] = {}
    for name, value in extra.items():
        if name in _STANDARD_MEMBERS or not _EXTENSION_NAME.fullmatch(name):
            log.warning("http.problem_member_dropped", member=name, reason="name")
            continue
        try:
            members[name] = _json_value(value)
        except _NotJson:
            log.warning("http.problem_member_dropped", member=name, reason="value")
    return members


def _json_value(value: Any, depth: int = 0) -> Any:
    if depth > 8:
        raise _NotJson
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson
        return value
    if isinstance(value, Enum):
        return _json_value(value.value, depth + 1)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_json_value(item, depth + 1) for item in value]
    if isinstance(value, Mapping) and all(isinstance(key, str) for key in value):
        return {key: _json_value(item, depth + 1) for key, item in value.items()}
    raise _NotJson


def problem_response(
    request: Request,
    *,
    status: int,
    code: str,
    title: str,
    detail: str,
    errors: Sequence[FieldError] = (),
    headers: dict[str, str] | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> JSONResponse:
    """Build a problem+json response; 401s always carry `WWW-Authenticate`.

    `extensions` are added as RFC 9457 extension members, filtered by `extension_members`.
    """
    body = Problem(
        type=problem_type(code),
        title=title,
        status=status,
        detail=detail,
        code=code,
        instance=request_instance(request),
        errors=list(errors),
    )
    all_headers = dict(headers or {})
    if status == 401:
        # RFC 6750: a credential was sent but refused -> error="invalid_token".
        challenge = AUTHENTICATE_HEADER
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            challenge += ', error="invalid_token"'
        all_headers.setdefault("WWW-Authenticate", challenge)
    standard = body.model_dump(mode="json", exclude_none=True)
    content = {**standard, **extension_members(extensions or {})}
    return JSONResponse(
        content,
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=all_headers,
    )


def _domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DomainError)
    errors = [FieldError(field=exc.field, message=exc.detail)] if exc.field else []
    return problem_response(
        request,
        status=exc.status,
        code=exc.code,
        title=exc.title,
        detail=exc.detail,
        errors=errors,
        extensions=exc.extra,
        headers=getattr(exc, "headers", None),
    )


def validation_field_errors(raw_errors: Sequence[Any], body: Any) -> list[FieldError]:
    """Turn FastAPI/pydantic error entries into `{field, message}` pairs.

    Body errors are named by `errors.field_path`, a body that is not JSON at all `(body)`; query,
    path and header errors by the parameter name.
    """
    out: list[FieldError] = []
    for err in raw_errors:
        loc = tuple(err.get("loc", ()))
        where, rest = (loc[0], loc[1:]) if loc else ("body", ())
        if where == "body":
            malformed = err.get("type") == "json_invalid"
            name = "(body)" if malformed else field_path(rest, body) or "(body)"
        else:
            name = ".".join(str(part) for part in rest) or str(where)
        out.append(FieldError(field=name, message=_message(err)))
    return out


def _message(err: Any) -> str:
    message = str(err.get("msg", "invalid value"))
    # pydantic prefixes messages of custom validators; the prefix adds nothing for a client.
    return message.removeprefix("Value error, ")


def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = validation_field_errors(exc.errors(), exc.body)
    detail = "; ".join(f"{e.field}: {e.message}" for e in errors) or "the request is invalid"
    return problem_response(
        request,
        status=422,
        code="invalid_input",
        title="Invalid input",
        detail=detail,
        errors=errors,
    )


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app answers at the request's path (a path has one
    route per method: the router's own 405 names only the first route it found)."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes
        )
    ]


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:
        # The framework's only 400: a body it could not decode (not UTF-8, nested past the
        # parser's depth). For the client that is a body that is not JSON, as malformed JSON is.
        return problem_response(
            request,
            status=422,
            code="invalid_input",
            title="Invalid input",
            detail="(body): the body is not valid UTF-8 JSON",
            errors=[FieldError(field="(body)", message="the body is not valid UTF-8 JSON")],
        )
    code, title = _STATUS_CODES.get(exc.status_code, ("http_error", "HTTP error"))
    detail = exc.detail if isinstance(exc.detail, str) else title
    if exc.status_code == 404 and detail == "Not Found":
        detail = "no such resource"
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(allowed_methods(request))
    return problem_response(
        request, status=exc.status_code, code=code, title=title, detail=detail, headers=headers
    )


def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    # Lock contention (SQLite "database is locked", PostgreSQL serialization failures) and lost
    # connections: the request changed nothing (its transaction rolled back) and may be retried.
    reason = db.unavailable_reason(exc)
    log.warning(
        "http.database_unavailable",
        path=_log_path(request),
        error_type=type(exc).__name__,
        reason=reason,
    )
    return problem_response(
        request,
        status=503,
        code="database_unavailable",
        title="Service unavailable",
        detail=f"{reason}; nothing was changed, retry shortly",
        headers={"Retry-After": "1"},
    )


def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    # The exception itself, not the thread's current one: a sync handler runs in a worker
    # thread, outside the `except` that caught it. Its traceback is redacted with the line.
    log.error(
        "http.unhandled_error",
        path=_log_path(request),
        error_type=type(exc).__name__,
        exc_info=exc,
    )
    return problem_response(
        request,
        status=500,
        code="internal_error",
        title="Internal error",
        detail="the server could not complete the request",
    )


def install_problem_handlers(app: FastAPI) -> None:
    """Render every error of `app` as problem+json."""
    app.add_exception_handler(DomainError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected_error)


CONFLICT_RESPONSE: dict[int | str, dict[str, Any]] = {
    409: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "Conflict: a name already taken, an Idempotency-Key reused with another "
        "request, or an object whose state does not allow the call (see `code` and `detail`)",
    }
}

PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": title}
    for status, title in (
        (401, "Missing, invalid or revoked API key"),
        (403, "The API key lacks the scope this call needs"),
        (404, "Not found (or owned by another tenant)"),
        (413, "`body_too_large`: the request body is larger than the limit for its route"),
        (422, "Invalid input, naming the field"),
        (
            429,
            "`rate_limited`: the API key sends more requests per second than its plan allows "
            "(`Retry-After` says when to retry); `quota_exceeded`: a monthly quota of the plan "
            "is used up (`quota` names it)",
        ),
    )
}
