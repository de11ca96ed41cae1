"""Scanned batch, end to end: 100 one-page scans (generated invoices, 200 dpi greyscale JPEG,
mild degradation) through the HTTP API of `docflow serve`, POST to terminal, read under the
`fast` policy (Tesseract only) and, beside it, under `auto` (PP-OCR re-reads the pages whose
required fields stay weak; the share of pages re-read is reported).

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


def pipeline_seconds(files: list[BenchFile], reading: str) -> tuple[float, float]:
    """Seconds from the POST of `files` as one batch to its terminal status, in a fresh serve
    with the workflow read under `reading`, and the share of OCRed pages PP-OCR read again."""
    with embedded() as deployment:
        api = Api(deployment.base_url, create_tenant(deployment, "Bench"))
        watcher = BatchWatcher(deployment)
        try:
            workflow = api.invoice_workflow(reading)
            run_batch(api, watcher, workflow, files[:WARM_UP], timeout=timeout_for(WARM_UP))
            submitted = run_batch(api, watcher, workflow, files, timeout=timeout_for(len(files)))
            reread = reread_share(api, submitted.batch_id)
        finally:
            watcher.close()
            api.close()
    return submitted.seconds, reread


def reread_share(api: Api, batch_id: str) -> float:
    """Pages PP-OCR read over pages Tesseract read, over the batch's documents."""
    pages: dict[str, int] = {}
    cursor: str | None = None
    while True:
        query = f"?limit=100&cursor={cursor}" if cursor else "?limit=100"
        listed = api.call("GET", f"/v1/batches/{batch_id}/documents{query}", 200)
        for item in listed["items"]:
            document = api.call("GET", f"/v1/documents/{item['id']}", 200)
            for engine, count in ((document.get("result") or {}).get("pages_read") or {}).items():
                pages[engine] = pages.get(engine, 0) + count
        cursor = listed.get("next_cursor")
        if not cursor:
            break
    return pages.get("ppocr", 0) / max(1, pages.get("tesseract", 0))


def run(ctx: Context, out: Outcome) -> None:
    count = QUICK if ctx.quick else FULL
    files = documents("scan", count=count)
    f = out.figures
    f.declare("docs_per_s", "docs/s", "documents per second, POST to terminal")
    f.declare("tesseract_docs_per_s", "docs/s", f"`tesseract` program, {CORES} processes")
    f.declare("ratio_to_tesseract", "×", "pipeline (`fast`) / `tesseract` program", at_least(1.0))
    seconds_target = at_most(SECONDS_TARGET) if count == FULL else None
    f.declare("seconds", "s", f"{count} documents, POST to terminal (`fast`)", seconds_target)
    f.declare("auto_docs_per_s", "docs/s", "documents per second under `auto`")
    f.declare("auto_ratio_to_tesseract", "×", "pipeline (`auto`) / `tesseract` program")
    f.declare("auto_reread_share", "", "share of OCRed pages PP-OCR read again under `auto`")
    out.notes.append(
        "embedded `docflow serve`, default settings, a 2-document warm-up batch first; the "
        "reference runs `tesseract FILE stdout --psm 6 tsv` on the same JPEG files; `fast` "
        "and `auto` each in a fresh serve"
    )
    for repeat in range(ctx.repeat):
        if repeat % 2 == 0:
            reference = tesseract_docs_per_s(files)
            seconds, _ = pipeline_seconds(files, "fast")
            auto_seconds, reread = pipeline_seconds(files, "auto")
        else:
            auto_seconds, reread = pipeline_seconds(files, "auto")
            seconds, _ = pipeline_seconds(files, "fast")
            reference = tesseract_docs_per_s(files)
        f.add("docs_per_s", count / seconds)
        f.add("tesseract_docs_per_s", reference)
        f.add("ratio_to_tesseract", count / seconds / reference)
        f.add("seconds", seconds)
        f.add("auto_docs_per_s", count / auto_seconds)
        f.add("auto_ratio_to_tesseract", count / auto_seconds / reference)
        f.add("auto_reread_share", reread)
        ctx.log(
            f"scanned_batch {repeat + 1}/{ctx.repeat}: fast {count / seconds:.2f} docs/s, "
            f"auto {count / auto_seconds:.2f} docs/s ({reread:.0%} re-read), "
            f"tesseract {reference:.2f} docs/s"
        )
    out.details["documents"] = count
    out.details["scan"] = "200 dpi greyscale JPEG, mild degradation"
