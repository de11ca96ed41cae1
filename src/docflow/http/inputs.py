"""Values no database column can hold are refused at the edge, for every field at once.

PostgreSQL refuses NUL (`\\u0000`) in text, neither engine can store an unpaired surrogate
(`\\ud800`: not encodable as UTF-8), and a JSON number too large for a float (`1e400`, read
as infinity) cannot be written back as JSON; each would fail a query as a 500. One app-wide
dependency looks at every path parameter, query parameter, header value and value of a JSON
body (object keys included), so no schema, present or future, can forget it, and answers 422
naming each field as request validation does (`name`, `fields.0.locators.0.labels.1`,
`project_id`, `cursor`). Cursors carry their values encoded: `docflow.kit.pagination` checks
those.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError

from docflow.kit.inputs import unstorable

MESSAGE = "Input should not contain NUL (\\u0000) or unpaired surrogate characters"
NUMBER_MESSAGE = "Input should be a finite number"

Location = tuple[int | str, ...]


def _key(key: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if unstorable(c) else c for c in key)


def _faults(body: Any) -> list[tuple[Location, str]]:
    """Where `body` (parsed JSON) holds what no column stores, and why; a loop, not recursion,
    so the deepest body the JSON parser accepts is walked too."""
    faults: list[tuple[Location, str]] = []
    pending: list[tuple[Location, Any]] = [((), body)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str) and unstorable(value):
            faults.append((path, MESSAGE))
        elif isinstance(value, float) and not math.isfinite(value):
            faults.append((path, NUMBER_MESSAGE))  # 1e400 is parsed as infinity
        elif isinstance(value, list):
            pending += [((*path, index), item) for index, item in enumerate(value)]
        elif isinstance(value, dict):
            for key, item in value.items():
                if unstorable(key):
                    faults.append(((*path, _key(key)), MESSAGE))
                else:
                    pending.append(((*path, key), item))
    return sorted(faults, key=lambda fault: [str(part) for part in fault[0]])


_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


async def _json_body(request: Request) -> Any:
    route = request.scope.get("route")
    if getattr(route, "body_field", None) is None:
        return None  # the route reads no JSON body
    if request.headers.get("content-type", "").startswith(_FORMS):
        # A form (the console's), parsed and kept by FastAPI already: its text values.
        form = await request.form()
        return {key: value for key, value in form.multi_items() if isinstance(value, str)}
    try:
        return await request.json()  # parsed (and kept) by FastAPI already for a JSON body
    except (ValueError, RecursionError):
        return None  # not JSON: request validation says so


def _header_name(name: str) -> str:
    # Headers arrive lower-cased; the API names them as documented (`Idempotency-Key`).
    return "-".join(part.capitalize() for part in name.split("-"))


async def refuse_unstorable_values(request: Request) -> None:
    """An app-wide dependency: 422 for each field holding what no database column stores."""
    faults: list[tuple[Location, str]] = []
    for source, items in (
        ("path", request.path_params.items()),
        ("query", request.query_params.multi_items()),
        ("header", ((_header_name(n), v) for n, v in request.headers.items())),
    ):
        faults += [((source, n), MESSAGE) for n, v in items if unstorable(f"{n}{v}")]
    body = await _json_body(request)
    faults += [(("body", *path), message) for path, message in _faults(body)]
    if faults:
        raise RequestValidationError(
            [{"type": "value_unstorable", "loc": loc, "msg": msg} for loc, msg in faults],
            body=body,
        )
