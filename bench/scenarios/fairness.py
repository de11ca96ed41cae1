"""Fairness between tenants: tenant A submits 1000 text PDFs, then tenant B submits 5; B's
time (POST to terminal) while A's batch runs, against B's time alone in the same process.

Embedded `docflow serve`. B alone is measured first (after a warm-up batch), then A's batch is
submitted (POST and every upload: A's documents are all queued when B comes), then B's batch.
The process is stopped once B is done: A's remaining documents are not waited for.
"""

from __future__ import annotations

from bench.harness.client import Api, BatchWatcher, create_tenant, run_batch, submit
from bench.harness.documents import documents
from bench.harness.processes import embedded
from bench.harness.scenario import Context, Outcome
from bench.harness.stats import at_most
from bench.scenarios.text_batch import WARM_UP, timeout_for

FULL_A, QUICK_A = 1000, 100
B_COUNT = 5
STOP_TIMEOUT_S = 10.0


def declare(out: Outcome, a_count: int) -> None:
    f = out.figures
    f.declare("b_alone_s", "s", f"B's {B_COUNT} documents alone")
    f.declare("b_with_a_s", "s", f"B's {B_COUNT} documents while A's {a_count} run")
    f.declare("b_slowdown", "×", "B with A / B alone", at_most(3.0))
    f.declare("a_left_when_b_done", "docs", "A's documents not yet finished when B was done")


def run(ctx: Context, out: Outcome) -> None:
    a_count = QUICK_A if ctx.quick else FULL_A
    a_files = documents("pdf", count=a_count)
    b_files = documents("pdf", count=B_COUNT, seed=2)
    declare(out, a_count)
    out.notes.append(
        "one embedded `docflow serve`; B alone first, then A's batch (POST and all uploads), "
        "then B's; times from each batch's POST to its terminal status; A is not waited for"
    )
    f = out.figures
    for repeat in range(ctx.repeat):
        # Stopped while A's documents are still running: a slow stop is not B's time.
        with embedded(stop_timeout=STOP_TIMEOUT_S) as deployment:
            tenant_a = Api(deployment.base_url, create_tenant(deployment, "Tenant A"))
            tenant_b = Api(deployment.base_url, create_tenant(deployment, "Tenant B"))
            watcher = BatchWatcher(deployment)
            try:
                flow_a, flow_b = tenant_a.invoice_workflow(), tenant_b.invoice_workflow()
                run_batch(tenant_b, watcher, flow_b, b_files[:WARM_UP], timeout=60)
                alone = run_batch(tenant_b, watcher, flow_b, b_files, timeout=60)
                a_batch = submit(tenant_a, *flow_a, a_files)
                with_a = run_batch(tenant_b, watcher, flow_b, b_files, timeout=timeout_for(a_count))
                a_left = watcher.unfinished_documents(a_batch.batch_id)
            finally:
                watcher.close()
                tenant_a.close()
                tenant_b.close()
        f.add("b_alone_s", alone.seconds)
        f.add("b_with_a_s", with_a.seconds)
        f.add("b_slowdown", with_a.seconds / alone.seconds)
        f.add("a_left_when_b_done", a_left)
        ctx.log(
            f"fairness {repeat + 1}/{ctx.repeat}: B alone {alone.seconds:.2f} s, with A "
            f"{with_a.seconds:.2f} s, {a_left} of A's documents left"
        )
