"""Every Prometheus metric docflow exports, and the two ways they are recorded.

Counters and histograms live in this process (in `docflow api --workers N`, in files shared by
its processes: `exposition.py`). What happens inside a database transaction is counted only
once that transaction commits (`count_after_commit`), so a step retried after a rollback, or a
review that lost a race, is never counted twice.

Label values are bounded sets: routes are the API's path templates, statuses and failure codes
are the documented ones, step and stage names are the code's. Only the queue backlog gauges
(`collectors.py`) carry a tenant id, for the few tenants with the most waiting work.

`record(False)` (a composition root, for `DOCFLOW_METRICS_ENABLED=false`) turns the recording of
steps, stages and committed counts off in this process.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prometheus_client import Counter, Histogram
from sqlalchemy import event
from sqlalchemy.orm import Session

P = ParamSpec("P")
R = TypeVar("R")

_RECORDING = {"on": True}


def record(enabled: bool) -> None:
    """Record metrics in this process (the default), or not."""
    _RECORDING["on"] = enabled


# Seconds: an API call (milliseconds) up to a scanned document's OCR (tens of seconds).
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

HTTP_REQUESTS = Counter(
    "docflow_http_requests",
    "HTTP requests answered, by method, route template and status code.",
    ["method", "route", "status"],
)
HTTP_DURATION = Histogram(
    "docflow_http_request_duration_seconds",
    "Time to answer an HTTP request (to the end of its body), by method and route template.",
    ["method", "route"],
    buckets=_SECONDS,
)
DOCUMENTS = Counter(
    "docflow_documents",
    "Documents that reached a terminal status, by status and failure code ('' when none).",
    ["status", "code"],
)
STEP_DURATION = Histogram(
    "docflow_step_duration_seconds",
    "Wall time of one attempt of a durable step, by step name and whether it raised.",
    ["step", "outcome"],
    buckets=_SECONDS,
)
STAGE_DURATION = Histogram(
    "docflow_extraction_stage_seconds",
    "Wall time of the extraction engine's stages; `read` by the reader that produced the pages "
    "(text_layer, tesseract, ppocr).",
    ["stage", "engine"],
    buckets=_SECONDS,
)
WEBHOOK_ATTEMPTS = Counter(
    "docflow_webhook_attempts",
    "Webhook delivery attempts, by outcome: delivered, or the failure category.",
    ["outcome"],
)
DEAD_LETTERS = Counter(
    "docflow_dead_letters_written",
    "Dead letters written, by consumer (webhooks, documents, or an event consumer).",
    ["consumer"],
)
STORED_FILE_INTEGRITY_FAILURES = Counter(
    "docflow_stored_file_integrity_failures",
    "Stored files that failed their seal's check on read (changed, truncated, not this key's), "
    "by where: open (the header or first chunk, before any byte was handed out: a download "
    "answers 500) or stream (a later chunk: a download already under way is cut short).",
    ["where"],
)

LLM_CALLS = Counter(
    "docflow_llm_calls",
    "Language-model requests of the gap-fill, by provider, model, task (extract, verify) and "
    "outcome (answered, cached: served from the result cache, failed).",
    ["provider", "model", "task", "outcome"],
)
LLM_TOKENS = Counter(
    "docflow_llm_tokens",
    "Language-model tokens, by provider, model and kind (input, cached: the part of the input "
    "read from the provider's prompt cache, output).",
    ["provider", "model", "kind"],
)
LLM_COST = Counter(
    "docflow_llm_cost",
    "What the language-model calls cost by the configured price table (DOCFLOW_LLM_PRICES).",
    ["provider", "model"],
)

TRUST_DRIFTS = Counter(
    "docflow_trust_drifts",
    "Fields whose measured precision at their confidence cut fell below the workflow's target "
    "(docflow.workflow.trust_drifted.v1), by reason.",
    ["reason"],
)

_PENDING = "docflow.metrics.pending"


def count_after_commit(
    session: Session, counter: Counter, amount: float = 1.0, **labels: str
) -> None:
    """Count `amount` on `counter` with `labels` when the session's transaction commits;
    nothing when it rolls back."""
    if not _RECORDING["on"]:
        return
    pending: list[tuple[Counter, float, dict[str, str]]] = session.info.setdefault(_PENDING, [])
    pending.append((counter, amount, labels))


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    # Also called when a SAVEPOINT is released: its changes are not committed yet.
    if session.get_nested_transaction() is not None:
        return
    for counter, amount, labels in session.info.pop(_PENDING, []):
        counter.labels(**labels).inc(amount)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    if session.get_nested_transaction() is None:
        session.info.pop(_PENDING, None)


def timed_step(name: str, body: Callable[P, R]) -> Callable[P, R]:
    """`body`, each call observed in `docflow_step_duration_seconds` under `name`."""

    @functools.wraps(body)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if not _RECORDING["on"]:
            return body(*args, **kwargs)
        started = time.perf_counter()
        outcome = "error"
        try:
            result = body(*args, **kwargs)
            outcome = "ok"
            return result
        finally:
            STEP_DURATION.labels(name, outcome).observe(time.perf_counter() - started)

    return run


# The engine's stage names whose time is another reader's: PP-OCR's re-read and its stages.
_PPOCR_SUFFIX = "_ppocr"


def observe_extraction(timings_ms: dict[str, float], pages_read: dict[str, Any]) -> None:
    """Observe an engine run's stage timings (`ExtractionResult.timings_ms`): the first read
    by the engine that read its pages (`pages_read`: pages per OCR engine), PP-OCR's re-read
    and its stages as `ppocr`, every other stage as `engine`."""
    # The first reading's engine: Tesseract, else PP-OCR alone (the `accurate` policy), else
    # no page needed OCR.
    if not _RECORDING["on"]:
        return
    first = next((e for e in ("tesseract", "ppocr") if pages_read.get(e)), "text_layer")
    for stage, ms in timings_ms.items():
        if stage == "total":
            continue
        if stage.endswith(_PPOCR_SUFFIX):
            STAGE_DURATION.labels(stage.removesuffix(_PPOCR_SUFFIX), "ppocr").observe(ms / 1000)
        elif stage == "read":
            STAGE_DURATION.labels("read", first).observe(ms / 1000)
        elif stage == "reread":
            STAGE_DURATION.labels("read", "ppocr").observe(ms / 1000)
        else:
            STAGE_DURATION.labels(stage, "engine").observe(ms / 1000)
