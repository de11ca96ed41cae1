"""Reserved worker slots: a noisy tenant submits a big batch of scans, then a small tenant
submits a few text PDFs; the small tenant's time to its first document started and to its
batch done, on the shared documents queue (its plan reserves nothing) and on a plan that
reserves slots, side by side in one run.

Each side is a fresh embedded `docflow serve` with the same settings: `WORKER_CONCURRENCY` 1
(the noisy tenant's documents fill every shared slot, as several noisy tenants would fill a
larger worker: one tenant alone holds at most three quarters of a bigger one) and a plan
`reserved` with `reserved_slots` 1 (its queue exists on both sides); only the small tenant's
plan differs (`enterprise`, on the shared queue, or `reserved`). The noisy tenant's
batch is submitted whole (POST and every upload) before the small one's POST; times are from
the small batch's start (its last upload lands) to the earliest `started_at` of its documents
and to its batch's terminal status.
The process is stopped once the small batch is done: the noisy one is not waited for.
"""

from __future__ import annotations

import json
from datetime import datetime

from bench.harness.client import Api, BatchWatcher, create_tenant, submit
from bench.harness.documents import documents
from bench.harness.processes import embedded
from bench.harness.scenario import Context, Outcome

FULL_NOISY, QUICK_NOISY = 200, 12
FULL_SMALL, QUICK_SMALL = 10, 4
SLOTS = 1
STOP_TIMEOUT_S = 10.0
SMALL_TIMEOUT_S = 600.0
ENV = {
    "DOCFLOW_WORKER_CONCURRENCY": str(SLOTS),
    "DOCFLOW_PLANS": json.dumps(
        {"free": {}, "enterprise": {}, "reserved": {"reserved_slots": SLOTS}}
    ),
}
SIDES = (("shared", "enterprise"), ("reserved", "reserved"))


def declare(out: Outcome, noisy: int, small: int) -> None:
    f = out.figures
    for side, _ in SIDES:
        f.declare(f"{side}_first_start_s", "s", f"{side}: first of {small} started, {noisy} queued")
        f.declare(f"{side}_done_s", "s", f"{side}: {small} documents done while {noisy} wait")
        f.declare(f"{side}_noisy_left", "docs", f"{side}: noisy documents left when it was done")


def first_started(api: Api, batch_id: str) -> float:
    """The earliest `started_at` of the batch's documents (epoch seconds)."""
    page = api.call("GET", f"/v1/batches/{batch_id}/documents", 200, params={"limit": 100})
    starts = [datetime.fromisoformat(d["started_at"]) for d in page["items"] if d["started_at"]]
    return min(starts).timestamp()


def run(ctx: Context, out: Outcome) -> None:
    noisy_count = QUICK_NOISY if ctx.quick else FULL_NOISY
    small_count = QUICK_SMALL if ctx.quick else FULL_SMALL
    noisy_files = documents("scan", count=noisy_count)
    small_files = documents("pdf", count=small_count, seed=3)
    declare(out, noisy_count, small_count)
    out.notes.append(
        f"embedded `docflow serve` per side, WORKER_CONCURRENCY {SLOTS}, plan `reserved` with "
        f"reserved_slots {SLOTS}; the noisy tenant's {noisy_count} scans are all queued before "
        f"the small tenant's {small_count} text PDFs are posted; times from the small batch's "
        "start (its last upload)"
    )
    f = out.figures
    for repeat in range(ctx.repeat):
        for side, plan in SIDES:
            with embedded(env=ENV, stop_timeout=STOP_TIMEOUT_S) as deployment:
                noisy = Api(deployment.base_url, create_tenant(deployment, "Noisy"))
                small = Api(deployment.base_url, create_tenant(deployment, "Small", plan=plan))
                watcher = BatchWatcher(deployment)
                try:
                    flow_noisy, flow_small = noisy.invoice_workflow(), small.invoice_workflow()
                    big = submit(noisy, *flow_noisy, noisy_files)
                    batch = submit(small, *flow_small, small_files)
                    watcher.wait(batch, timeout=SMALL_TIMEOUT_S)
                    first = first_started(small, batch.batch_id) - batch.uploaded_at
                    done = batch.finished_at - batch.uploaded_at
                    left = watcher.unfinished_documents(big.batch_id)
                finally:
                    watcher.close()
                    noisy.close()
                    small.close()
            f.add(f"{side}_first_start_s", first)
            f.add(f"{side}_done_s", done)
            f.add(f"{side}_noisy_left", left)
            ctx.log(
                f"reservation {repeat + 1}/{ctx.repeat} {side}: first started {first:.2f} s, "
                f"done {done:.2f} s, {left} noisy documents left"
            )
