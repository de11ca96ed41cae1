"""The provider protocol: one structured call, its usage, and the errors worth retrying.

A provider answers a `Prompt` (a stable prefix the provider may cache, the request that
follows it, and the JSON schema the answer must match) with an `Answer`: the values, and the
tokens it counted. `TransientError` is a failure that may pass (429, 5xx, a timeout, a
dropped connection); `ProviderError` is one that will not (a refused key, a bad request, an
answer that is not the JSON asked for). `call_with_retries` retries the first kind with
exponential backoff and lets the second through at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

log = structlog.get_logger(__name__)

BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one call: `input_tokens` counts every prompt token, `cached_tokens` the part
    of them read from the provider's prompt cache."""

    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Prompt:
    """What is sent: `prefix` (identical for every document of a workflow, so cacheable),
    `request` (this document's fields and lines) and the answer's JSON `schema`."""

    prefix: str
    request: str
    schema: dict[str, Any]
    max_output_tokens: int = 512


@dataclass(frozen=True, slots=True)
class Answer:
    values: dict[str, Any]
    usage: Usage


class ProviderError(Exception):
    """A failure that will not pass by retrying. `attempts`: the calls made before it
    (set by `call_with_retries`)."""

    attempts: int = 1


class TransientError(ProviderError):
    """A failure that may pass: rate limited, overloaded, a 5xx, a timeout."""


class Provider(Protocol):
    """A language model behind its vendor's client library."""

    name: str

    def complete(self, prompt: Prompt, *, model: str) -> Answer:
        """The answer to `prompt` from `model`; raises `TransientError` or `ProviderError`."""
        ...


def call_with_retries(
    provider: Provider,
    prompt: Prompt,
    *,
    model: str,
    attempts: int,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Answer, int]:
    """The answer and the attempts it took; transient errors are retried `attempts` times in
    all, waiting 0.5 s, 1 s, 2 s ... (at most 8 s) between them; the last error propagates."""
    for attempt in range(1, attempts + 1):
        try:
            return provider.complete(prompt, model=model), attempt
        except ProviderError as exc:
            exc.attempts = attempt
            if not isinstance(exc, TransientError) or attempt == attempts:
                raise
            log.info("llm.retry", provider=provider.name, attempt=attempt, error=str(exc))
            sleep(min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2 ** (attempt - 1)))
    raise AssertionError("unreachable: attempts must be at least 1")
