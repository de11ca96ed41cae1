"""Security headers on responses: a pure ASGI middleware.

Every answer carries `API_HEADERS`: `X-Content-Type-Options: nosniff` (a browser never
guesses a type, so a JSON body or a stored file is never run as a script or shown as a page)
and `Referrer-Policy: same-origin` (no address of ours, with its ids, leaves in a Referer to
another site). A part of the app under a path prefix adds its own the same way (the console:
its Content-Security-Policy and X-Frame-Options). A header a route set itself is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}


class ResponseHeaders:
    """Adds `headers` to every HTTP response, or only under `path_prefix` (the prefix itself
    and the paths below it) when one is given."""

    def __init__(self, app: ASGIApp, *, headers: Mapping[str, str], path_prefix: str = "") -> None:
        self.app = app
        self.path_prefix = path_prefix.rstrip("/")
        self.headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]

    def _applies(self, path: str) -> bool:
        prefix = self.path_prefix
        return not prefix or path == prefix or path.startswith(f"{prefix}/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._applies(scope.get("path", "")):
            await self.app(scope, receive, send)
            return

        async def answer(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = message.get("headers", [])
                names = {name.lower() for name, _ in present}
                message["headers"] = [
                    *present,
                    *((name, value) for name, value in self.headers if name not in names),
                ]
            await send(message)

        await self.app(scope, receive, answer)
