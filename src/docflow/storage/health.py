"""The storage's readiness check: can this process write to its bucket?

`storage_check` returns a check for `/readyz` when the storage can probe itself (S3: a put and a
delete of a tiny object under a reserved key, with short timeouts), None otherwise (the local
folder). The outcome, pass or fail, is kept for `ttl_seconds`, so readiness polled every second
by several load balancers costs S3 one probe per process every few seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from docflow.kit.readiness import ReadinessCheck
from docflow.storage.base import Probe, Storage

log = structlog.get_logger(__name__)

PROBE_TTL_S = 5.0


def storage_check(
    storage: Storage,
    *,
    ttl_seconds: float = PROBE_TTL_S,
    clock: Callable[[], float] = time.monotonic,
) -> ReadinessCheck | None:
    """A readiness check raising when the storage's probe fails (the bucket is missing, or
    this process may not write or delete in it), its outcome cached for `ttl_seconds`; None
    for a storage without a probe."""
    if not isinstance(storage, Probe):
        return None
    lock = threading.Lock()
    last: dict[str, object] = {}

    def check() -> None:
        with lock:  # one probe at a time; the others wait for its outcome
            at = last.get("at")
            if not isinstance(at, float) or clock() - at >= ttl_seconds:
                last["error"] = _probe(storage)
                last["at"] = clock()
            error = last["error"]
        if isinstance(error, Exception):
            raise error

    return check


def _probe(storage: Probe) -> Exception | None:
    try:
        storage.probe()
    except Exception as exc:
        log.warning("storage.probe_failed", error=str(exc)[:80], error_type=type(exc).__name__)
        return exc
    return None
