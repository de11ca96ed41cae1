"""Each HTTP request's id, and how requests join traces.

`RequestIds` (pure ASGI) gives every request an id (a client's `X-Request-ID` when it is a
short token, else a new one), answers it in `X-Request-ID`, and binds it to every log line the
request causes. With traces on (`docflow.observability.tracing`), FastAPI's own telemetry
(`TELEMETRY`) makes each request's server span, named by its route template and continuing a
caller's W3C `traceparent`; it is current while the handler runs, so the work the request
enqueues joins its trace. FastAPI's finer spans (dependencies, serialization) and its
exporting of logs and metrics stay off: Prometheus has the metrics, and exception messages
never leave the process.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_ID_HEADER = b"x-request-id"
_GIVEN_ID = re.compile(rb"[A-Za-z0-9._-]{1,64}")

TELEMETRY: dict[str, Any] = {
    "tracing": True,
    "operation_spans": False,
    "logs": False,
    "metrics": False,
    "auto_configure": False,
}


class RequestIds:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(REQUEST_ID_HEADER, b"")
        request_id = given.decode() if _GIVEN_ID.fullmatch(given) else secrets.token_hex(8)

        async def answer(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    (REQUEST_ID_HEADER, request_id.encode()),
                ]
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            await self.app(scope, receive, answer)
