"""Scanned batch, end to end: 100 one-page scans (generated invoices, 200 dpi greyscale JPEG,
mild degradation) through the HTTP API of `docflow serve`, POST to terminal.

Reference, in the same run: the same JPEG files through the `tesseract` program, one process per
core at a time (`OMP_THREAD_LIMIT=1`), with the production page segmentation (`--psm 6`) and TSV
output (words with boxes, as the engine needs). The reference and the pipeline alternate which
goes first from one repeat to the next.
"""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from bench.harness.client import Api, BatchWatcher, create_tenant, run_batch
from bench.harness.documents import BenchFile, documents
from bench.harness.processes import BenchError, embedded
from bench.harness.scenario import Context, Outcome
from bench.harness.stats import at_least, at_most
from docflow.extraction.ocr import TesseractCliEngine

FULL, QUICK = 100, 4
WARM_UP = 2
SECONDS_TARGET = 30.0
CORES = os.cpu_count() or 1


def timeout_for(count: int) -> float:
    return 120.0 + 5.0 * count


def tesseract_docs_per_s(files: list[BenchFile]) -> float:
    """Pages per second of the `tesseract` program over `files`, one process per core."""
    cli = TesseractCliEngine()
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}

    def read(file: BenchFile) -> None:
        done = subprocess.run(cli.command(str(file.path)), capture_output=True, env=env)
        if done.returncode != 0 or not done.stdout:
            raise BenchError(f"tesseract failed on {file.name}: {done.stderr[-500:]!r}")

    with ThreadPoolExecutor(CORES) as pool:
        started = time.perf_counter()
        list(pool.map(read, files))
        return len(files) / (time.perf_counter() - started)


def pipeline_seconds(files: list[BenchFile]) -> float:
    """Seconds from the POST of `files` as one batch to its terminal status, in a fresh serve."""
    with embedded() as deployment:
        api = Api(deployment.base_url, create_tenant(deployment, "Bench"))
        watcher = BatchWatcher(deployment)
        try:
            workflow = api.invoice_workflow()
            run_batch(api, watcher, workflow, files[:WARM_UP], timeout=timeout_for(WARM_UP))
            submitted = run_batch(api, watcher, workflow, files, timeout=timeout_for(len(files)))
        finally:
            watcher.close()
            api.close()
    return submitted.seconds


def run(ctx: Context, out: Outcome) -> None:
    count = QUICK if ctx.quick else FULL
    files = documents("scan", count=count)
    f = out.figures
    f.declare("docs_per_s", "docs/s", "documents per second, POST to terminal")
    f.declare("tesseract_docs_per_s", "docs/s", f"`tesseract` program, {CORES} processes")
    f.declare("ratio_to_tesseract", "×", "pipeline / `tesseract` program", at_least(1.0))
    seconds_target = at_most(SECONDS_TARGET) if count == FULL else None
    f.declare("seconds", "s", f"{count} documents, POST to terminal", seconds_target)
    out.notes.append(
        "embedded `docflow serve`, default settings, a 2-document warm-up batch first; the "
        "reference runs `tesseract FILE stdout --psm 6 tsv` on the same JPEG files"
    )
    for repeat in range(ctx.repeat):
        if repeat % 2 == 0:
            reference = tesseract_docs_per_s(files)
            seconds = pipeline_seconds(files)
        else:
            seconds = pipeline_seconds(files)
            reference = tesseract_docs_per_s(files)
        f.add("docs_per_s", count / seconds)
        f.add("tesseract_docs_per_s", reference)
        f.add("ratio_to_tesseract", count / seconds / reference)
        f.add("seconds", seconds)
        ctx.log(
            f"scanned_batch {repeat + 1}/{ctx.repeat}: {count / seconds:.2f} docs/s, "
            f"tesseract {reference:.2f} docs/s"
        )
    out.details["documents"] = count
    out.details["scan"] = "200 dpi greyscale JPEG, mild degradation"
