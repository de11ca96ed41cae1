"""Distributed mode: the text batch of `text_batch` (500 one-page text PDFs) on PostgreSQL with
one `docflow api` and two `docflow worker` processes (a fresh database per run, dropped after;
the files in a local folder all three share), against the embedded `docflow serve` on the same
cores.

The embedded reference is the `text_batch` scenario when it ran earlier in this invocation (same
batch, same client; ratios against its median); otherwise this scenario measures it itself just
before each distributed run (ratios run by run).
"""

from __future__ import annotations

import statistics

from bench.harness.documents import documents
from bench.harness.executions import engine_times
from bench.harness.processes import distributed, embedded
from bench.harness.scenario import Context, Outcome
from bench.harness.stats import at_least
from bench.scenarios import text_batch

WORKERS = 2


def run(ctx: Context, out: Outcome) -> None:
    count = text_batch.QUICK if ctx.quick else text_batch.FULL
    files = documents("pdf", count=count)
    f = out.figures
    f.declare("docs_per_s", "docs/s", f"documents per second, 1 api + {WORKERS} workers")
    f.declare("embedded_docs_per_s", "docs/s", "documents per second, embedded serve")
    f.declare("ratio_to_embedded", "×", "distributed / embedded throughput", at_least(0.9))
    f.declare("overhead_ms_p50", "ms", "pipeline overhead per document, median")
    f.declare("seconds", "s", f"{count} documents, POST to terminal")
    f.declare("docs_in_flight", "docs", "documents in flight on average, last upload to end")
    earlier = ctx.earlier.get("text_batch")
    reuse = earlier is not None and earlier.error is None and bool(earlier.figures.items)
    reference: list[float] = []
    if reuse and earlier is not None:
        reference = list(earlier.figures.items["docs_per_s"].values)
        out.notes.append("embedded reference: the text_batch scenario of this invocation")
    else:
        out.notes.append("embedded reference: measured here, before each distributed run")
    out.notes.append(text_batch.OVERHEAD_DEFINITION)
    for repeat in range(ctx.repeat):
        if not reuse:
            with embedded() as deployment:
                reference.append(text_batch.measure_batch(deployment, files).docs_per_s)
        with distributed(workers=WORKERS) as deployment:
            measured = text_batch.measure_batch(deployment, files)
        engine_ms = engine_times(files)
        f.add("docs_per_s", measured.docs_per_s)
        f.add("seconds", measured.submitted.seconds)
        f.add("docs_in_flight", measured.docs_in_flight)
        f.add("overhead_ms_p50", statistics.median(text_batch.overheads_ms(measured, engine_ms)))
        ctx.log(f"distributed {repeat + 1}/{ctx.repeat}: {measured.docs_per_s:.1f} docs/s")
    for value in reference:
        f.add("embedded_docs_per_s", value)
    rates = f.items["docs_per_s"].values
    # Each run against the embedded run just before it; against the median of text_batch's.
    references = reference if not reuse else [statistics.median(reference)] * len(rates)
    for rate, embedded_rate in zip(rates, references, strict=True):
        f.add("ratio_to_embedded", rate / embedded_rate)
