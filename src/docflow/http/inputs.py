"""Characters no database column can hold are refused at the edge, for every string at once.

PostgreSQL refuses NUL (`\\u0000`) in text, and neither engine can store an unpaired surrogate
(`\\ud800`: not encodable as UTF-8); either would fail a query as a 500. One app-wide
dependency looks at every path parameter, query parameter, header value and string of a JSON
body (object keys included), so no schema, present or future, can forget it, and answers 422
naming each field as request validation does (`name`, `fields.0.locators.0.labels.1`,
`project_id`, `cursor`). Cursors carry their values encoded: `docflow.kit.pagination` checks
those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError

from docflow.kit.inputs import unstorable

MESSAGE = "Input should not contain NUL (\\u0000) or unpaired surrogate characters"

# How such a character must appear in a JSON body (raw control characters and invalid UTF-8
# are not JSON): a cheap test before the body is walked.
_ESCAPED = re.compile(rb"\\u(?:0000|[dD][89abcdefABCDEF])")


def _paths(value: Any, path: tuple[int | str, ...]) -> Iterator[tuple[int | str, ...]]:
    if isinstance(value, str):
        if unstorable(value):
            yield path
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            if unstorable(key):
                yield (*path, "".join(f"\\u{ord(c):04x}" if unstorable(c) else c for c in key))
            else:
                yield from _paths(item, (*path, key))


async def _json_body(request: Request) -> Any:
    route = request.scope.get("route")
    if getattr(route, "body_field", None) is None:
        return None  # the route reads no JSON body
    raw = await request.body()  # already read (and kept) by FastAPI
    if not _ESCAPED.search(raw):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None  # not JSON: request validation says so


def _header_name(name: str) -> str:
    # Headers arrive lower-cased; the API names them as documented (`Idempotency-Key`).
    return "-".join(part.capitalize() for part in name.split("-"))


async def refuse_unstorable_characters(request: Request) -> None:
    """An app-wide dependency: 422 for each field holding a character no database stores."""
    locations: list[tuple[int | str, ...]] = []
    for source, items in (
        ("path", request.path_params.items()),
        ("query", request.query_params.multi_items()),
        ("header", ((_header_name(n), v) for n, v in request.headers.items())),
    ):
        locations += [(source, name) for name, value in items if unstorable(f"{name}{value}")]
    body = await _json_body(request)
    locations += [("body", *path) for path in _paths(body, ())]
    if locations:
        raise RequestValidationError(
            [{"type": "string_unstorable", "loc": loc, "msg": MESSAGE} for loc in locations],
            body=body,
        )
