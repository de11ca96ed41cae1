"""Request bodies are bounded before anything reads them: a pure ASGI middleware.

FastAPI reads and parses a JSON body before it resolves a route's dependencies, authentication
among them, so without a bound anyone could make the server hold a body of any size. The
middleware sits outermost and answers 413 problem+json (`body_too_large`, with `max_bytes`):

- at once, from `Content-Length`, when a body declares more than its limit (nothing is read);
- while streaming, for chunked bodies (and any other), as soon as the bytes received pass the
  limit: nothing past the limit is kept, the application is told the client went away
  (`http.disconnect`) and whatever it answers after that is dropped.

Either way the answer carries `Connection: close`: the rest of the body is never read.

A route may have a limit of its own, or none (`RouteLimit`): the upload endpoint enforces its
signed size cap itself while spooling to disk, so the JSON limit must not apply to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docflow.errors import LimitExceeded
from docflow.http.problems import problem_response


class BodyTooLarge(LimitExceeded):
    """A request body larger than its route's limit."""

    code = "body_too_large"

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            f"the request body is larger than the limit of {max_bytes} bytes", max_bytes=max_bytes
        )
        self.max_bytes = max_bytes


@dataclass(frozen=True, slots=True)
class RouteLimit:
    """The body limit of the requests with `method` whose path matches `path` (a regular
    expression matched from the start); `max_bytes` None: not limited here."""

    method: str
    path: re.Pattern[str]
    max_bytes: int | None


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """The most bytes a request body may have: the first matching route's limit, else `default`."""

    default: int
    routes: tuple[RouteLimit, ...] = ()

    def for_request(self, method: str, path: str) -> int | None:
        for route in self.routes:
            if route.method == method and route.path.match(path):
                return route.max_bytes
        return self.default


class BodyLimitMiddleware:
    """Refuse request bodies past their limit with 413, before the application reads them."""

    def __init__(self, app: ASGIApp, *, limits: BodyLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = self.limits.for_request(scope["method"], scope["path"])
        if max_bytes is None:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > max_bytes:
            await _refuse(scope, receive, send, max_bytes)
            return
        await _LimitedRequest(self.app, scope, receive, send, max_bytes).run()


class _LimitedRequest:
    """One request whose body is counted as it streams in."""

    def __init__(
        self, app: ASGIApp, scope: Scope, receive: Receive, send: Send, max_bytes: int
    ) -> None:
        self.app, self.scope, self._receive, self._send = app, scope, receive, send
        self.max_bytes = max_bytes
        self.received = 0
        self.response_started = False
        self.refused = False

    async def run(self) -> None:
        await self.app(self.scope, self.receive, self.send)

    async def receive(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] != "http.request":
            return message
        self.received += len(message.get("body", b""))
        if self.received <= self.max_bytes:
            return message
        self.refused = True
        if not self.response_started:
            self.response_started = True
            await _refuse(self.scope, self._receive, self._send, self.max_bytes)
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.refused:
            return  # the 413 was the answer; the application's own comes after it
        if message["type"] == "http.response.start":
            self.response_started = True
        await self._send(message)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


async def _refuse(scope: Scope, receive: Receive, send: Send, max_bytes: int) -> None:
    error = BodyTooLarge(max_bytes)
    response = problem_response(
        Request(scope),
        status=error.status,
        code=error.code,
        title=error.title,
        detail=error.detail,
        headers={"Connection": "close"},
        extensions=error.extra,
    )
    await response(scope, receive, send)
