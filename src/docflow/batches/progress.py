"""A batch's live progress as a Server-Sent Events stream (`GET /v1/batches/{id}/events`, and
the console's progress bars).

The stream reads the batch every `poll_seconds` (in a worker thread: the reads are blocking)
and sends a `progress` event with the batch's JSON whenever it changed, a comment line when
nothing was sent for `heartbeat_seconds` (so proxies keep the connection and the client sees
it alive), and ends with an `end` event once the batch is terminal, or with a `timeout` event
after `max_seconds` (the client reconnects; EventSource does so by itself). It holds no
connection between reads. A batch deleted meanwhile ends the stream with `end` and no data.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from sqlalchemy.orm import Session

from docflow.batches.models import TERMINAL_BATCH_STATUSES
from docflow.batches.schemas import BatchRead
from docflow.batches.service import get_batch
from docflow.errors import NotFound
from docflow.tenancy import TenantContext

MEDIA_TYPE = "text/event-stream"
# Answer headers of a stream: not cached, not buffered by a proxy.
HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


@dataclass(frozen=True, slots=True)
class StreamLimits:
    poll_seconds: float
    heartbeat_seconds: float
    max_seconds: float


def event(name: str, data: Any, *, event_id: str | None = None) -> str:
    """One SSE event: `event:`, an optional `id:` and one `data:` line of JSON."""
    head = f"event: {name}\n" + (f"id: {event_id}\n" if event_id else "")
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


async def batch_events(
    read: Callable[[], dict[str, Any] | None],
    limits: StreamLimits,
    *,
    first: dict[str, Any] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[str]:
    """The stream of one batch, `read` giving its JSON (None once it is gone); `first` is a
    snapshot already read (the caller's check that the batch exists)."""
    started = last_sent = clock()
    seen: Any = None
    snapshot = first if first is not None else await anyio.to_thread.run_sync(read)
    while True:
        if snapshot is None:
            yield event("end", None)
            return
        if snapshot != seen:
            seen = snapshot
            last_sent = clock()
            yield event("progress", snapshot, event_id=str(snapshot.get("updated_at") or ""))
        if snapshot.get("status") in TERMINAL_BATCH_STATUSES:
            yield event("end", {"status": snapshot.get("status")})
            return
        if clock() - started >= limits.max_seconds:
            yield event("timeout", {"after_seconds": limits.max_seconds})
            return
        if clock() - last_sent >= limits.heartbeat_seconds:
            last_sent = clock()
            yield ": heartbeat\n\n"
        await anyio.sleep(limits.poll_seconds)
        snapshot = await anyio.to_thread.run_sync(read)


def batch_reader(
    open_session: Callable[[], Session], tenant: TenantContext, batch_id: str
) -> Callable[[], dict[str, Any] | None]:
    """Reads the batch's JSON (as `GET /v1/batches/{id}` answers it) in a short session of its
    own each time; None once the batch is gone. The first read raises NotFound for a missing
    batch or another tenant's, before any stream starts."""

    def read() -> dict[str, Any] | None:
        with open_session() as session:
            try:
                batch = get_batch(session, tenant, batch_id=batch_id)
            except NotFound:
                return None
            return BatchRead.model_validate(batch).model_dump(mode="json")

    return read


def first_snapshot(read: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    """The batch's JSON now; NotFound ("batch") when there is none for the caller."""
    snapshot = read()
    if snapshot is None:
        raise NotFound("batch not found")
    return snapshot
