"""Sending one webhook attempt: a POST with a timeout, no redirects followed, the outcome kept
small (status, latency, a short error, its category) so it fits the delivery log."""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

MAX_ERROR_LENGTH = 500
USER_AGENT = "docflow-webhooks/1"


# Why an attempt got no answer (the category of a dead letter, with `http_4xx`, `http_5xx`...).
TIMEOUT = "timeout"
CONNECTION = "connection"
REFUSED = "refused"  # the URL resolves to an address docflow may not call
SECRET = "secret"  # the endpoint's secret cannot be unsealed: nothing was signed


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one POST did: the status code (None when no answer came), how long it took, and,
    when no answer came, why (`failure`: one of the categories above)."""

    status_code: int | None
    latency_ms: int
    error: str | None
    failure: str = CONNECTION

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def category(self) -> str:
        """The failure's category: `gone` (410), `http_4xx`, `http_5xx`, `http_3xx` (a
        redirect, not followed), or why no answer came (`timeout`, `connection`, ...)."""
        if self.status_code is None:
            return self.failure
        if self.status_code == 410:
            return "gone"
        return f"http_{self.status_code // 100}xx"


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> AttemptResult:
    """POST `body` to `url`; never raises for network errors (they become the result's error).

    A redirect is an answer like any other non-2xx: it is not followed, so a receiver cannot
    bounce the request to an address the URL check refused.
    """
    started = time.monotonic()
    all_headers = {"content-type": "application/json", "user-agent": USER_AGENT, **headers}
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            response = client.post(url, content=body, headers=all_headers)
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_LENGTH]
        why = TIMEOUT if isinstance(exc, httpx.TimeoutException) else CONNECTION
        return AttemptResult(None, _elapsed_ms(started), error, why)
    failure = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
    return AttemptResult(response.status_code, _elapsed_ms(started), failure)


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
