"""A batch's progress stream (`GET /v1/batches/{id}/events`): the stream's own rules with a
scripted batch and a fake clock, then the endpoint on the real app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

from docflow.batches.progress import StreamLimits, batch_events
from support.api_fixtures import ApiTenant, make_objects, ok

FAST = StreamLimits(poll_seconds=0.001, heartbeat_seconds=3, max_seconds=100)


class Script:
    """Reads the snapshots given, one per read; the clock advances one second per read."""

    def __init__(self, *snapshots: dict[str, Any] | None) -> None:
        self.snapshots: Iterator[dict[str, Any] | None] = iter(snapshots)
        self.now = 0.0
        self.reads = 0

    def read(self) -> dict[str, Any] | None:
        self.reads += 1
        self.now += 1
        return next(self.snapshots)

    def clock(self) -> float:
        return self.now


def _run(script: Script, limits: StreamLimits = FAST) -> list[str]:
    async def collect() -> list[str]:
        return [chunk async for chunk in batch_events(script.read, limits, clock=script.clock)]

    return anyio.run(collect)


def _events(chunks: list[str]) -> list[tuple[str, Any]]:
    out = []
    for chunk in chunks:
        if chunk.startswith(":"):
            out.append(("comment", chunk.strip()))
            continue
        lines = dict(line.split(": ", 1) for line in chunk.strip().splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def _batch(status: str, done: int) -> dict[str, Any]:
    return {"id": "bat_1", "status": status, "succeeded_count": done, "document_count": 3}


def test_changes_are_sent_once_and_a_terminal_batch_ends_the_stream() -> None:
    script = Script(
        _batch("PROCESSING", 0),
        _batch("PROCESSING", 0),
        _batch("PROCESSING", 2),
        _batch("SUCCEEDED", 3),
        _batch("SUCCEEDED", 3),
    )
    events = _events(_run(script))
    assert events == [
        ("progress", _batch("PROCESSING", 0)),
        ("progress", _batch("PROCESSING", 2)),
        ("progress", _batch("SUCCEEDED", 3)),
        ("end", {"status": "SUCCEEDED"}),
    ]
    assert script.reads == 4  # nothing is read after the end


def test_silence_is_broken_by_heartbeats_and_the_stream_lasts_at_most_its_limit() -> None:
    script = Script(*[_batch("PROCESSING", 1)] * 50)
    limits = StreamLimits(poll_seconds=0.001, heartbeat_seconds=3, max_seconds=10)
    events = _events(_run(script, limits))
    assert events[0] == ("progress", _batch("PROCESSING", 1))
    assert events[-1] == ("timeout", {"after_seconds": 10})
    # read at seconds 1 to 10: a heartbeat 3 s after the last event (4, 7), the end at 10
    assert events[1:-1] == [("comment", ": heartbeat")] * 2
    assert script.reads <= 11


def test_a_batch_gone_meanwhile_ends_the_stream() -> None:
    assert _events(_run(Script(_batch("PROCESSING", 0), None))) == [
        ("progress", _batch("PROCESSING", 0)),
        ("end", None),
    ]


def test_the_endpoint_streams_a_batch_to_its_end(
    client: TestClient, tenant_key_a: ApiTenant, tenant_key_b: ApiTenant
) -> None:
    objects = make_objects(client, tenant_key_a)
    batch_id = objects.batch["id"]
    ok(client.post(f"/v1/batches/{batch_id}/cancel", headers=tenant_key_a.headers), 200)
    with client.stream(
        "GET", f"/v1/batches/{batch_id}/events", headers=tenant_key_a.headers
    ) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["cache-control"] == "no-store"
        body = "".join(stream.iter_text())
    events = _events([c + "\n\n" for c in body.split("\n\n") if c.strip()])
    assert [name for name, _ in events] == ["progress", "end"]
    assert events[0][1]["id"] == batch_id and events[0][1]["status"] == "CANCELLED"
    assert events[0][1] == ok(
        client.get(f"/v1/batches/{batch_id}", headers=tenant_key_a.headers), 200
    )
    other = client.get(f"/v1/batches/{batch_id}/events", headers=tenant_key_b.headers)
    assert other.status_code == 404
    assert other.headers["content-type"].startswith("application/problem+json")
    assert client.get(f"/v1/batches/{batch_id}/events").status_code == 401


@pytest.mark.parametrize("param", ["after=1", "limit=5"])
def test_unknown_query_parameters_are_refused(
    client: TestClient, tenant_key_a: ApiTenant, param: str
) -> None:
    answer = client.get(f"/v1/batches/bat_x/events?{param}", headers=tenant_key_a.headers)
    assert answer.status_code == 422
