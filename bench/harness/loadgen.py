"""The load generator of the `api_load` scenario, run in a process of its own:

    python -m bench.harness.loadgen < config.json > report.json

`concurrency` async clients (one connection each) send requests back to back for `seconds`:
batch creations of `documents` declared files, batch status reads and document listings of
batches created earlier, picked at random in the proportions of `mix`. The report has, per
window of `seconds / windows`, each kind's request count, errors and latencies (p50/p95/p99 ms);
an error is a transport failure or any status other than the expected one.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
import uuid
from collections import defaultdict
from typing import Any

import httpx

from bench.harness.stats import percentile

EXPECTED = {"create": 202, "status": 200, "list": 200}


class Load:
    """Requests and their outcomes, by kind, each with the time it started."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.batches: list[str] = list(config["seed_batches"])
        self.records: list[tuple[str, float, float, bool]] = []
        self.error_samples: list[str] = []
        self.body = {
            "project_id": config["project_id"],
            "workflow_id": config["workflow_id"],
            "documents": [
                {"name": f"load-{n}.pdf", "content_type": "application/pdf", "size": 2048}
                for n in range(config["documents"])
            ],
        }

    async def one(self, client: httpx.AsyncClient, kind: str, rng: random.Random) -> None:
        started = time.perf_counter()
        ok = False
        try:
            if kind == "create":
                headers = {"Idempotency-Key": f"load-{uuid.uuid4()}"}
                response = await client.post("/v1/batches", json=self.body, headers=headers)
                if response.status_code == EXPECTED[kind]:
                    self.batches.append(response.json()["id"])
            elif kind == "status":
                response = await client.get(f"/v1/batches/{rng.choice(self.batches)}")
            else:
                response = await client.get(f"/v1/batches/{rng.choice(self.batches)}/documents")
            ok = response.status_code == EXPECTED[kind]
            if not ok and len(self.error_samples) < 10:
                self.error_samples.append(f"{kind}: {response.status_code} {response.text[:200]}")
        except httpx.HTTPError as exc:
            if len(self.error_samples) < 10:
                self.error_samples.append(f"{kind}: {type(exc).__name__} {exc}")
        elapsed = time.perf_counter() - started
        self.records.append((kind, started, elapsed * 1000, ok))

    async def client_loop(self, client: httpx.AsyncClient, seed: int, end: float) -> None:
        rng = random.Random(seed)
        kinds, weights = zip(*self.config["mix"].items(), strict=True)
        while time.perf_counter() < end:
            await self.one(client, rng.choices(kinds, weights)[0], rng)

    async def run(self) -> float:
        config = self.config
        limits = httpx.Limits(max_connections=config["concurrency"])
        headers = {"Authorization": f"Bearer {config['token']}"}
        async with httpx.AsyncClient(
            base_url=config["base_url"], headers=headers, limits=limits, timeout=30.0
        ) as client:
            started = time.perf_counter()
            end = started + config["seconds"]
            loops = [self.client_loop(client, n, end) for n in range(config["concurrency"])]
            await asyncio.gather(*loops)
        return started


def _summary(latencies: list[float], errors: int, seconds: float) -> dict[str, float]:
    body = {"count": len(latencies), "errors": errors, "per_s": len(latencies) / seconds}
    if latencies:
        for name, share in (("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99)):
            body[name] = percentile(latencies, share)
    return body


def report(load: Load, started: float) -> dict[str, Any]:
    """Per window: per kind and over all requests, counts, errors, rates and latencies."""
    windows = load.config["windows"]
    width = load.config["seconds"] / windows
    grouped: list[dict[str, list[tuple[float, bool]]]] = [defaultdict(list) for _ in range(windows)]
    for kind, at, ms, ok in load.records:
        index = min(int((at - started) / width), windows - 1)
        grouped[index][kind].append((ms, ok))
    out = []
    for window in grouped:
        everything = [r for records in window.values() for r in records]
        kinds = {
            kind: _summary([ms for ms, _ in rs], sum(not ok for _, ok in rs), width)
            for kind, rs in window.items()
        }
        all_ms = [ms for ms, _ in everything]
        kinds["all"] = _summary(all_ms, sum(not ok for _, ok in everything), width)
        out.append(kinds)
    return {"windows": out, "error_samples": load.error_samples}


def main() -> None:
    config = json.load(sys.stdin)
    load = Load(config)
    started = asyncio.run(load.run())
    json.dump(report(load, started), sys.stdout)


if __name__ == "__main__":
    main()
