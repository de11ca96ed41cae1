"""Text-layer batch, end to end: 500 one-page text PDFs through the HTTP API of `docflow serve`.

Figures: documents per second from the batch POST until the batch is terminal (uploads
included: the batch starts when its last file lands), the per-document pipeline overhead, and
the median time of each step from the execution history, and the search projection's lag:
from a document's completion (its last change) to its search entry's write (the consumer of
the document events), p50, p99 and max over the batch's documents.

Overhead of a document = its workflow's wall time in the execution history (start of its first
step to end of its last) minus the engine's time on the same file (`extract_document` called
directly in the bench process after the batch, the median of three runs). It is what the durable
pipeline adds around the engine: steps, checkpoints, storage and database work, and contention
for the interpreter with the API and the other documents in flight (so it grows with the number
of documents in flight). Core time per document beyond the engine does not: the batch's run
time times the CPU count, per document, minus the engine's time; idle cores count against it.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from bench.harness.client import Api, BatchWatcher, Submitted, create_tenant, run_batch
from bench.harness.documents import BenchFile, documents
from bench.harness.executions import batch_history, engine_times
from bench.harness.processes import Deployment, embedded
from bench.harness.scenario import Context, Outcome
from bench.harness.stats import at_least, at_most, percentile

FULL, QUICK = 500, 8
ALONE = 8  # documents of the one-in-flight measurement (the first of the batch's files)
CORES = os.cpu_count() or 1
WARM_UP = 2
PROJECTION_TIMEOUT_S = 60.0  # after the batch is terminal, for the last search entries
CORE_OVERHEAD_DEFINITION = (
    "core time per document beyond the engine = the batch's run time (last upload to end) "
    "× the CPU count / documents, minus the engine's median time: unlike the per-document "
    "overhead it does not grow with the number of documents in flight, and counts idle cores"
)
OVERHEAD_DEFINITION = (
    "overhead per document = its workflow's wall time in the execution history (start of the "
    "first step to end of the last) minus the engine's time on the same file (extract_document "
    "in the bench process after the batch, median of 3 runs)"
)

PROJECTION_LAG_DEFINITION = (
    "projection lag of a document = its search entry's write (search_entries.updated_at, once "
    "it holds the document's version) minus the document's last change (documents.updated_at, "
    "its completion), read from the database after the batch is terminal"
)

PROJECTION_STAGES = {
    "relay": "of which the outbox relay (event written to handed over)",
    "queued": "of which the search consumer's queue (enqueued to started)",
    "run": "of which the search consumer's workflow (started to done)",
}


def timeout_for(count: int) -> float:
    return 60.0 + 1.0 * count


@dataclass
class TextRun:
    """One measured batch: the submission, each document's workflow wall time, step times."""

    submitted: Submitted
    walls_ms: dict[str, float]
    steps_ms: dict[str, list[float]] = field(default_factory=dict)
    projection_lags_ms: list[float] = field(default_factory=list)
    projection_stages_ms: dict[str, list[float]] = field(default_factory=dict)

    @property
    def docs_per_s(self) -> float:
        return len(self.submitted.files) / self.submitted.seconds

    @property
    def running_seconds(self) -> float:
        """From the last upload (the batch starts then) to the terminal status."""
        return self.submitted.finished_at - self.submitted.uploaded_at

    @property
    def core_ms_per_doc(self) -> float:
        """Core time per document while the batch ran (last upload to end, every core)."""
        return self.running_seconds * CORES * 1000 / len(self.submitted.files)

    @property
    def docs_in_flight(self) -> float:
        """The documents' workflow time over the time the batch ran: how many documents were
        being processed at once on average (at most the worker concurrency)."""
        return sum(self.walls_ms.values()) / 1000 / self.running_seconds


def measure_batch(deployment: Deployment, files: list[BenchFile]) -> TextRun:
    """A tenant, the invoice workflow, a warm-up batch, then the measured batch of `files`."""
    api = Api(deployment.base_url, create_tenant(deployment, "Bench"))
    watcher = BatchWatcher(deployment)
    try:
        workflow = api.invoice_workflow()
        # A server that has processed nothing yet loads its OCR engine and warms its caches on
        # the first document; a production server is warm.
        run_batch(api, watcher, workflow, files[:WARM_UP], timeout=timeout_for(WARM_UP))
        submitted = run_batch(api, watcher, workflow, files, timeout=timeout_for(len(files)))
        history = batch_history(api, submitted.batch_id)
        lags = watcher.projection_lags_ms(submitted.batch_id, timeout=PROJECTION_TIMEOUT_S)
        stages = watcher.projection_stages_ms(submitted.batch_id)
        return TextRun(submitted, history.walls_ms, history.steps_ms, lags, stages)
    finally:
        watcher.close()
        api.close()


def overheads_ms(run: TextRun, engine_ms: dict[str, float]) -> list[float]:
    return [wall - engine_ms[run.submitted.files[d].name] for d, wall in run.walls_ms.items()]


def declare(out: Outcome, count: int) -> None:
    f = out.figures
    f.declare("docs_per_s", "docs/s", "documents per second, POST to terminal", at_least(40))
    f.declare("seconds", "s", f"{count} documents, POST to terminal")
    f.declare("upload_s", "s", "  of which the POST and the uploads")
    f.declare("processing_docs_per_s", "docs/s", "documents per second, last upload to terminal")
    f.declare("overhead_ms_p50", "ms", "pipeline overhead per document, median", at_most(25))
    f.declare(
        "overhead_alone_ms_p50",
        "ms",
        f"  the same with one document in flight ({ALONE} documents, WORKER_CONCURRENCY=1)",
    )
    f.declare("overhead_ms_p95", "ms", "pipeline overhead per document, p95")
    f.declare(
        "overhead_core_ms_per_doc",
        "ms",
        f"core time per document beyond the engine ({CORES} cores × run time / documents)",
    )
    f.declare("workflow_ms_p50", "ms", "document workflow wall time, median")
    f.declare("docs_in_flight", "docs", "documents in flight on average, last upload to end")
    f.declare("engine_ms_p50", "ms", "engine time per document (bench process), median")
    f.declare("projection_lag_ms_p50", "ms", "search projection lag (completion to entry), median")
    f.declare("projection_lag_ms_p99", "ms", "search projection lag, p99")
    f.declare("projection_lag_ms_max", "ms", "search projection lag, max")
    for stage, meaning in PROJECTION_STAGES.items():
        f.declare(f"projection_{stage}_ms_p50", "ms", f"  {meaning}, median")


def record(out: Outcome, run: TextRun, engine_ms: dict[str, float]) -> None:
    f = out.figures
    overheads = overheads_ms(run, engine_ms)
    f.add("docs_per_s", run.docs_per_s)
    f.add("seconds", run.submitted.seconds)
    f.add("upload_s", run.submitted.upload_seconds)
    f.add("processing_docs_per_s", len(run.walls_ms) / run.running_seconds)
    f.add("overhead_ms_p50", statistics.median(overheads))
    f.add("overhead_ms_p95", percentile(overheads, 0.95))
    f.add("overhead_core_ms_per_doc", run.core_ms_per_doc - statistics.median(engine_ms.values()))
    f.add("workflow_ms_p50", statistics.median(run.walls_ms.values()))
    f.add("docs_in_flight", run.docs_in_flight)
    f.add("engine_ms_p50", statistics.median(engine_ms.values()))
    f.add("projection_lag_ms_p50", statistics.median(run.projection_lags_ms))
    f.add("projection_lag_ms_p99", percentile(run.projection_lags_ms, 0.99))
    f.add("projection_lag_ms_max", max(run.projection_lags_ms))
    for stage in PROJECTION_STAGES:
        f.add(f"projection_{stage}_ms_p50", statistics.median(run.projection_stages_ms[stage]))
    for name, durations in sorted(run.steps_ms.items()):
        f.declare(f"step_ms_p50.{name}", "ms", f"  step {name}, median")
        f.add(f"step_ms_p50.{name}", statistics.median(durations))


def measure_alone(files: list[BenchFile], engine_ms: dict[str, float]) -> float:
    """The median overhead of documents processed one at a time: the pipeline's own cost per
    document, without the waits for the cores that other documents in flight cause."""
    with embedded(env={"DOCFLOW_WORKER_CONCURRENCY": "1"}) as deployment:
        run = measure_batch(deployment, files)
    return statistics.median(overheads_ms(run, engine_ms))


def run(ctx: Context, out: Outcome) -> None:
    count = QUICK if ctx.quick else FULL
    files = documents("pdf", count=count)
    declare(out, count)
    out.notes.append(OVERHEAD_DEFINITION)
    out.notes.append(CORE_OVERHEAD_DEFINITION)
    out.notes.append(PROJECTION_LAG_DEFINITION)
    out.notes.append(
        "embedded `docflow serve` (SQLite, local folder) in a subprocess, default settings; "
        f"a {WARM_UP}-document warm-up batch first; the end is seen by reading the batch row"
    )
    statuses: dict[str, int] = defaultdict(int)
    for repeat in range(ctx.repeat):
        with embedded() as deployment:
            batch = measure_batch(deployment, files)
        statuses[batch.submitted.status] += 1
        engine_ms = engine_times(files)
        record(out, batch, engine_ms)
        out.figures.add("overhead_alone_ms_p50", measure_alone(files[:ALONE], engine_ms))
        ctx.log(
            f"text_batch {repeat + 1}/{ctx.repeat}: {batch.docs_per_s:.1f} docs/s, "
            f"overhead p50 {out.figures.items['overhead_ms_p50'].values[-1]:.1f} ms, "
            f"projection lag p50 {out.figures.items['projection_lag_ms_p50'].values[-1]:.0f} ms "
            f"p99 {out.figures.items['projection_lag_ms_p99'].values[-1]:.0f} ms "
            f"max {out.figures.items['projection_lag_ms_max'].values[-1]:.0f} ms "
            f"(relay {out.figures.items['projection_relay_ms_p50'].values[-1]:.0f} ms, "
            f"queued {out.figures.items['projection_queued_ms_p50'].values[-1]:.0f} ms, "
            f"run {out.figures.items['projection_run_ms_p50'].values[-1]:.0f} ms), "
            f"batch {batch.submitted.seconds:.1f} s"
        )
    out.details["documents"] = count
    out.details["batch_statuses"] = dict(statuses)
