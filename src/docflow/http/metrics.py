"""Request metrics and the `/metrics` endpoint.

`RequestMetrics` (pure ASGI, so streamed bodies are timed to their last byte) counts every
answered request by method, route template (`/v1/batches/{batch_id}`, the app's own list of
routes) and status, and times it. A path that matches no route counts as `unmatched`, so a
scanner's random paths cannot grow the label set.

`GET /metrics` answers the Prometheus text format (`docflow.observability`). With
`DOCFLOW_METRICS_TOKEN` set it requires `Authorization: Bearer <token>` (401 otherwise); it is
outside `/v1` and takes no tenant key: it reports on the whole installation.
"""

from __future__ import annotations

import re
import time

from fastapi import APIRouter, FastAPI, Response
from fastapi.routing import iter_route_contexts
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docflow.http.deps import MetricsRegistryDep
from docflow.observability import exposition
from docflow.observability.metrics import HTTP_DURATION, HTTP_REQUESTS

UNMATCHED = "unmatched"

router = APIRouter(tags=["health"])


class RequestMetrics:
    """Count and time each HTTP request under its route's path template."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._templates: list[tuple[re.Pattern[str], str]] | None = None

    def template(self, scope: Scope) -> str:
        """The path template of the first of the app's routes matching the request's path (in
        routing order), else `unmatched`; the list is read once, at the first request, when
        every router is included."""
        if self._templates is None:
            app: FastAPI = scope["app"]
            self._templates = [
                (context.path_regex, context.path_format)
                for context in iter_route_contexts(app.routes)
                if context.path_regex is not None and context.path_format
            ]
        path = scope["path"]
        return next((t for regex, t in self._templates if regex.match(path)), UNMATCHED)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = self.template(scope)
            method = scope["method"]
            HTTP_REQUESTS.labels(method, route, str(status)).inc()
            HTTP_DURATION.labels(method, route).observe(time.perf_counter() - started)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {exposition.CONTENT_TYPE: {}}}},
)
def metrics(registry: MetricsRegistryDep) -> Response:
    """Prometheus metrics of this installation (text format): requests, documents, steps,
    extraction stages, queues, webhooks, dead letters and outbox lag (docs/operations.md)."""
    return Response(exposition.render(registry), media_type=exposition.CONTENT_TYPE)
