"""An HTTP client for a docflow server, as an integrator uses the API.

Every call carries the API key as a bearer token. A problem+json answer becomes one `ApiError`
with its status, `code`, first field and `detail`; a server that cannot be reached (or answers
something that is no problem document) becomes `Unreachable`. A 503 is retried after its
`Retry-After`, a few times. Lists are read page by page, following `next_cursor`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import httpx

from docflow.errors import describe

RETRIES_ON_503 = 5
MAX_RETRY_AFTER = 30.0
PAGE_SIZE = 200


def upload_request(
    document: dict[str, Any], content: Any, *, filename: str, size: int
) -> tuple[str, str, dict[str, Any]]:
    """The method, URL and other arguments of the `httpx.Client.request` that sends one
    declared document's file
    (`content`: bytes or a binary file) to the target the batch's answer gave for it
    (`document["upload"]`): a PUT of the bytes with exactly its headers and the length (local
    storage; S3 takes no chunked upload), or a multipart POST of its form fields and then the
    file (S3's presigned POST, which checks the size and type itself)."""
    target = document.get("upload") or {}
    url = target.get("url") or document["upload_url"]
    if target.get("method") == "POST":
        form = {"file": (filename, content, document["content_type"])}
        return "POST", url, {"data": target["fields"], "files": form}
    headers = target.get("headers") or {"Content-Type": document["content_type"]}
    sized = {**headers, "Content-Length": str(size)}
    return "PUT", url, {"content": content, "headers": sized}


def send_upload(
    http: httpx.Client, document: dict[str, Any], data: bytes, *, filename: str
) -> httpx.Response:
    """Send an in-memory file with `upload_request` through `http` (a client carrying no API
    key), a 503 retried after its Retry-After a few times; the last answer, which
    `upload_landed` judges."""
    method, url, sent = upload_request(document, data, filename=filename, size=len(data))
    for attempt in range(RETRIES_ON_503 + 1):
        response = http.request(method, url, **sent)
        if response.status_code != 503 or attempt == RETRIES_ON_503:
            break
        time.sleep(_retry_after(response))
    return response


def upload_landed(response: httpx.Response) -> bool:
    """Whether an upload's answer says the file was taken: 200 from the API's PUT, 204 from
    S3's POST."""
    return response.status_code == (204 if response.request.method == "POST" else 200)


def confirms_upload(document: dict[str, Any]) -> bool:
    """Whether the file went straight to object storage (S3), so the client says it landed
    with `POST /v1/documents/{id}/uploaded` (else the schedule notices within a minute)."""
    return bool((document.get("upload") or {}).get("method") == "POST")


class ClientError(Exception):
    """Anything that ends a remote command; `exit_code` is the command's exit status."""

    exit_code = 2

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def message(self) -> str:
        return self.detail


class Unreachable(ClientError):
    """No answer from the server (connection refused, timeout), or a 5xx."""


class ApiError(ClientError):
    """A problem document (RFC 9457) answered by the server."""

    def __init__(
        self, status: int, detail: str, *, code: str | None = None, field: str | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.field = field
        self.exit_code = 1 if status < 500 else 2

    def message(self) -> str:
        return describe(self.detail, code=self.code or f"HTTP {self.status}", field=self.field)


def problem_of(response: httpx.Response) -> ApiError:
    """The `ApiError` of an answer that is not a success."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        text = response.text.strip()[:200] or response.reason_phrase
        return ApiError(response.status_code, text)
    errors = body.get("errors") or []
    field = errors[0].get("field") if errors and isinstance(errors[0], dict) else None
    detail = str(body.get("detail") or body.get("title") or response.reason_phrase)
    code = body.get("code")
    return ApiError(
        response.status_code,
        detail,
        code=str(code) if code else None,
        field=str(field) if field else None,
    )


def _retry_after(response: httpx.Response) -> float:
    try:
        seconds = float(response.headers.get("Retry-After", "1"))
    except ValueError:
        seconds = 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class Api:
    """One server and one API key. Uploads go without the key: their URL is the credential."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        connections: int = 10,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        limits = httpx.Limits(max_connections=connections + 2)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "docflow-cli"},
            timeout=timeout,
            limits=limits,
        )
        self._uploads = httpx.Client(
            timeout=timeout, limits=limits, headers={"User-Agent": "docflow-cli"}
        )

    def close(self) -> None:
        self._http.close()
        self._uploads.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _send(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        *,
        body: Callable[[], ContextManager[dict[str, Any]]] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """The answer to one request, a 503 retried after its Retry-After; errors raised.
        `body` opens the request's body arguments anew for each attempt (a file, streamed)."""
        for attempt in range(RETRIES_ON_503 + 1):
            try:
                with body() if body is not None else nullcontext({}) as sent:
                    response = client.request(method, url, **kwargs, **sent)
            except httpx.TransportError as exc:
                raise Unreachable(f"cannot reach {self.base_url}: {exc}") from exc
            if response.status_code != 503 or attempt == RETRIES_ON_503:
                break
            time.sleep(_retry_after(response))
        if response.status_code >= 400:
            raise problem_of(response)
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API call; its JSON answer (None for 204)."""
        response = self._send(self._http, method, path, **kwargs)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise Unreachable(f"{method} {path}: the answer is not JSON") from exc

    def get(self, path: str, **params: Any) -> Any:
        query = {k: v for k, v in params.items() if v is not None}
        return self.request("GET", path, params=query)

    def create(self, path: str, body: dict[str, Any], *, idempotency_key: str | None = None) -> Any:
        """A creating POST, with an Idempotency-Key (the same one on every retry)."""
        key = idempotency_key or f"cli-{uuid.uuid4()}"
        return self.request("POST", path, json=body, headers={"Idempotency-Key": key})

    def pages(self, path: str, *, limit: int | None = None, **params: Any) -> Iterator[Any]:
        """Every item of a paginated list (at most `limit` of them), page after page."""
        cursor: str | None = None
        seen = 0
        while True:
            size = PAGE_SIZE if limit is None else max(1, min(PAGE_SIZE, limit - seen))
            page = self.get(path, **params, limit=size, cursor=cursor)
            for item in page["items"]:
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def upload(self, document: dict[str, Any], path: Path) -> Any:
        """Send a file to its declared document's upload target (`upload_request`), streamed
        from disk; the answer's JSON, if any (S3 answers none)."""

        @contextmanager
        def body() -> Iterator[dict[str, Any]]:
            with path.open("rb") as handle:
                size = path.stat().st_size
                yield upload_request(document, handle, filename=path.name, size=size)[2]

        method, url, _ = upload_request(document, b"", filename=path.name, size=0)
        response = self._send(self._uploads, method, url, body=body)
        try:
            return response.json()
        except ValueError:
            return None

    def download(self, path: str, out: Any) -> int:
        """Stream `path`'s body into the binary file `out`; the bytes written."""
        written = 0
        for attempt in range(RETRIES_ON_503 + 1):
            try:
                with self._http.stream("GET", path) as response:
                    if response.status_code == 503 and attempt < RETRIES_ON_503:
                        time.sleep(_retry_after(response))
                        continue
                    if response.status_code >= 400:
                        response.read()
                        raise problem_of(response)
                    for chunk in response.iter_bytes():
                        out.write(chunk)
                        written += len(chunk)
                    return written
            except httpx.TransportError as exc:
                raise Unreachable(f"cannot reach {self.base_url}: {exc}") from exc
        return written
