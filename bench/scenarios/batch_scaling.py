"""Scale with batch size: 10, 100 and 1000 text PDFs, each size in a fresh `docflow serve`.

Per size: the time per document (POST to terminal, divided by the count), the SQL statements
the serve process executed per document between the POST and the end (every engine of the
process counted, DBOS's included: DOCFLOW_COUNT_QUERIES), and the process's peak RSS (VmHWM).
The statements per document also count what runs whatever the load (queue polling, schedules);
`idle_queries_per_s` shows how much that is.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from bench.harness.client import Api, BatchWatcher, create_tenant, run_batch
from bench.harness.documents import documents
from bench.harness.processes import Deployment, embedded
from bench.harness.scenario import Context, Outcome
from bench.harness.stats import at_most
from bench.scenarios.text_batch import WARM_UP, timeout_for

FULL, QUICK = (10, 100, 1000), (3, 6, 12)
IDLE_S = 1.0
TOP_STATEMENTS = 12


def declare(out: Outcome, sizes: tuple[int, ...]) -> None:
    f = out.figures
    small, large = sizes[0], sizes[-1]
    for n in sizes:
        f.declare(f"per_doc_ms_{n}", "ms", f"time per document, batch of {n}")
    f.declare("per_doc_ratio", "×", f"time per document, {large} / {small}", at_most(1.15))
    for n in sizes:
        f.declare(f"queries_per_doc_{n}", "queries", f"SQL statements per document, batch of {n}")
    f.declare(
        "queries_per_doc_ratio", "×", f"statements per document, {large} / {small}", at_most(1.15)
    )
    for n in sizes:
        f.declare(
            f"queries_net_per_doc_{n}",
            "queries",
            f"  less an idle process's statements over the same time, batch of {n}",
        )
    f.declare("idle_queries_per_s", "queries/s", "statements per second of an idle process")
    for n in sizes:
        f.declare(f"peak_rss_mb_{n}", "MB", f"peak RSS of the serve process, batch of {n}")
    f.declare("peak_rss_mb", "MB", "peak RSS of the serve process, any size", at_most(400))


def _delta(before: dict[str, Any], after: dict[str, Any]) -> Counter[str]:
    counts = Counter(after["by_statement"])
    counts.subtract(before["by_statement"])
    return +counts


def measure_size(deployment: Deployment, count: int) -> dict[str, Any]:
    """One batch of `count` documents: seconds, statements (total and by kind), peak RSS."""
    files = documents("pdf", count=count)
    api = Api(deployment.base_url, create_tenant(deployment, "Bench"))
    watcher = BatchWatcher(deployment)
    serve = deployment.api
    try:
        workflow = api.invoice_workflow()
        run_batch(api, watcher, workflow, files[:WARM_UP], timeout=timeout_for(WARM_UP))
        idle_from = serve.queries(written_after=time.time())
        time.sleep(IDLE_S)
        before = serve.queries(written_after=time.time())
        submitted = run_batch(api, watcher, workflow, files, timeout=timeout_for(count))
        after = serve.queries(written_after=submitted.finished_at)
        return {
            "seconds": submitted.seconds,
            "idle_per_s": (before["total"] - idle_from["total"])
            / (before["written_at"] - idle_from["written_at"]),
            "queries": after["total"] - before["total"],
            "by_statement": _delta(before, after),
            "peak_rss_mb": serve.peak_rss_mb(),
        }
    finally:
        watcher.close()
        api.close()


def run(ctx: Context, out: Outcome) -> None:
    sizes = QUICK if ctx.quick else FULL
    declare(out, sizes)
    out.notes.append(
        "each size in a fresh embedded `docflow serve` with a 2-document warm-up batch; "
        "statements counted in the serve process from the POST to the end of the batch"
    )
    f = out.figures
    for repeat in range(ctx.repeat):
        per_doc: dict[int, float] = {}
        queries: dict[int, float] = {}
        peaks: list[float] = []
        for n in sizes:
            with embedded(count_queries=True) as deployment:
                measured = measure_size(deployment, n)
            per_doc[n] = measured["seconds"] * 1000 / n
            queries[n] = measured["queries"] / n
            peaks.append(measured["peak_rss_mb"])
            f.add(f"per_doc_ms_{n}", per_doc[n])
            f.add(f"queries_per_doc_{n}", queries[n])
            idle = measured["idle_per_s"] * measured["seconds"]
            f.add(f"queries_net_per_doc_{n}", (measured["queries"] - idle) / n)
            f.add(f"peak_rss_mb_{n}", measured["peak_rss_mb"])
            f.add("idle_queries_per_s", measured["idle_per_s"])
            if n == sizes[-1]:
                top = measured["by_statement"].most_common(TOP_STATEMENTS)
                out.details["statements_per_doc_at_largest"] = {k: round(v / n, 2) for k, v in top}
            ctx.log(
                f"batch_scaling {repeat + 1}/{ctx.repeat} n={n}: {per_doc[n]:.1f} ms/doc, "
                f"{queries[n]:.1f} queries/doc, peak {measured['peak_rss_mb']:.0f} MB"
            )
        f.add("per_doc_ratio", per_doc[sizes[-1]] / per_doc[sizes[0]])
        f.add("queries_per_doc_ratio", queries[sizes[-1]] / queries[sizes[0]])
        f.add("peak_rss_mb", max(peaks))
    out.details["sizes"] = list(sizes)
