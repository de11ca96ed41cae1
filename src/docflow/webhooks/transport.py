"""Sending one webhook attempt: a POST with a timeout, no redirects followed, the outcome kept
small (status, latency, a short error, its category) so it fits the delivery log.

The attempt resolves the URL's host once and connects to the addresses it checked (see
`webhooks.urls`), sending the URL's host in `Host` and as the TLS server name, so certificates
are verified against the name and a second lookup can never lead elsewhere.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
import structlog

from docflow.errors import InvalidInput
from docflow.webhooks import urls

log = structlog.get_logger(__name__)

MAX_ERROR_LENGTH = 500
USER_AGENT = "docflow-webhooks/1"


# Why an attempt got no answer (the category of a dead letter, with `http_4xx`, `http_5xx`...).
TIMEOUT = "timeout"
CONNECTION = "connection"
REFUSED = "refused"  # the URL resolves to an address docflow may not call, or not at all
INVALID_URL = "invalid_url"  # the stored URL cannot be sent to (it fails today's URL rules)
UNEXPECTED = "unexpected"  # anything else went wrong while sending: logged with its traceback
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


def post(
    url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool
) -> AttemptResult:
    """POST `body` to `url`; never raises: whatever stops the attempt (a URL that no longer
    passes the rules, a refused address, a network error, anything unexpected) becomes the
    result's error and category.

    A redirect is an answer like any other non-2xx: it is not followed, so a receiver cannot
    bounce the request to an address the URL check refused. The answer's body is never read.
    """
    started = time.monotonic()
    try:
        status_code = _send(url, body, headers, timeout=timeout, allow_private=allow_private)
    except _NotSent as exc:
        return _failed(started, exc.error, exc.category)
    except httpx.TimeoutException as exc:
        return _failed(started, _describe(exc), TIMEOUT)
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        return _failed(started, _describe(exc), INVALID_URL)
    except httpx.HTTPError as exc:
        return _failed(started, _describe(exc), CONNECTION)
    except Exception as exc:  # an attempt's outcome is recorded, whatever stopped it
        log.warning("webhook.attempt_error", error_type=type(exc).__name__, exc_info=True)
        return _failed(started, _describe(exc), UNEXPECTED)
    failure = None if 200 <= status_code < 300 else f"HTTP {status_code}"
    return AttemptResult(status_code, _elapsed_ms(started), failure)


class _NotSent(Exception):
    """The URL stopped the attempt before anything was sent: why, and its category."""

    def __init__(self, category: str, error: str) -> None:
        super().__init__(error)
        self.category = category
        self.error = error


def _send(
    url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool
) -> int:
    """The status code of the POST to the first checked address of the URL's host that accepts
    a connection (the next one is tried only when connecting fails)."""
    try:
        parsed = urls.parse(url)
    except InvalidInput as exc:
        raise _NotSent(INVALID_URL, f"invalid URL: {exc}") from exc
    try:
        target = urls.destination(parsed, allow_private=allow_private)
    except InvalidInput as exc:
        raise _NotSent(REFUSED, f"refused: {exc}") from exc
    all_headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        **headers,
        "host": parsed.netloc.decode("ascii"),
    }
    extensions = {"sni_hostname": target.host} if parsed.scheme == "https" else {}
    *others, last = target.addresses
    with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        for address in others:
            try:
                return _post_to(client, target, address, body, all_headers, extensions)
            except httpx.ConnectError:
                continue
        return _post_to(client, target, last, body, all_headers, extensions)


def _post_to(
    client: httpx.Client,
    target: urls.Destination,
    address: urls.Address,
    body: bytes,
    headers: dict[str, str],
    extensions: dict[str, str],
) -> int:
    url = target.url.copy_with(host=str(address))
    request = client.build_request(
        "POST", url, content=body, headers=headers, extensions=extensions
    )
    response = client.send(request, stream=True)
    response.close()
    return response.status_code


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR_LENGTH]


def _failed(started: float, error: str, failure: str) -> AttemptResult:
    return AttemptResult(None, _elapsed_ms(started), error[:MAX_ERROR_LENGTH], failure)


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
