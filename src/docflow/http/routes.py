"""The route template of a request (`/v1/batches/{batch_id}`), for its metrics."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from starlette.types import Scope

UNMATCHED = "unmatched"


class RouteTemplates:
    """The path template of the first of the app's routes matching a request's path (in
    routing order), else `unmatched`; the list is read once, at the first request, when every
    router is included."""

    def __init__(self) -> None:
        self._templates: list[tuple[re.Pattern[str], str]] | None = None

    def __call__(self, scope: Scope) -> str:
        if self._templates is None:
            app: FastAPI = scope["app"]
            self._templates = [
                (context.path_regex, context.path_format)
                for context in iter_route_contexts(app.routes)
                if context.path_regex is not None and context.path_format
            ]
        path = scope["path"]
        return next((t for regex, t in self._templates if regex.match(path)), UNMATCHED)
