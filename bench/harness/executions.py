"""What the execution history says about a finished batch, and the engine's own time per file.

Both come from the product's history (`GET /v1/batches/{id}/history`, read after the batch is
terminal): each step's duration by name, and each document's workflow wall time, from the start
of its first step to the end of its last. (DBOS's workflow status has a dequeue and an end time
too, but on SQLite they are kept to the second; step times are kept to the millisecond.)
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench.harness.client import INVOICE_WORKFLOW, Api
from bench.harness.documents import BenchFile
from bench.harness.processes import BenchError
from docflow.config import Settings
from docflow.extraction.ocr import default_engine
from docflow.extraction.pipeline import extract_document
from docflow.extraction.result import ExtractionResult
from docflow.extraction.workflow_file import load_workflow_file
from docflow.runtime.launch import engine_limits


@dataclass
class History:
    """Per document id its workflow's wall time in ms; per step name every duration in ms."""

    walls_ms: dict[str, float]
    steps_ms: dict[str, list[float]]


def _ms(value: str) -> float:
    return datetime.fromisoformat(value).timestamp() * 1000


def _wall_ms(execution: dict[str, Any]) -> float:
    steps = execution["steps"]
    if not steps or any(s["completed_at"] is None for s in steps):
        raise BenchError(f"{execution['execution_id']} has unfinished steps")
    return max(_ms(s["completed_at"]) for s in steps) - min(_ms(s["started_at"]) for s in steps)


def batch_history(api: Api, batch_id: str) -> History:
    """The batch's history: document wall times and step durations."""
    history = api.call("GET", f"/v1/batches/{batch_id}/history", 200)
    steps: dict[str, list[float]] = defaultdict(list)
    walls: dict[str, float] = {}
    for execution in [history["execution"], *(d["execution"] for d in history["documents"])]:
        for step in (execution or {}).get("steps", []):
            if step["duration_ms"] is not None:
                steps[step["name"]].append(float(step["duration_ms"]))
    for document in history["documents"]:
        if document["execution"] is None:
            raise BenchError(f"document {document['document_id']} has no execution")
        walls[document["document_id"]] = _wall_ms(document["execution"])
    return History(walls, dict(steps))


def engine_times(files: list[BenchFile], *, runs: int = 3) -> dict[str, float]:
    """The engine's time per file in ms in this process (`extract_document` with the invoice
    workflow, the production OCR engine and limits), the median of `runs`, one file at a time."""
    definition = load_workflow_file(INVOICE_WORKFLOW)
    ocr = default_engine()
    limits = engine_limits(Settings())
    extract_document(files[0].read(), definition, ocr=ocr, limits=limits)  # engine loaded
    times: dict[str, float] = {}
    for file in files:
        data = file.read()
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            result = extract_document(data, definition, ocr=ocr, limits=limits)
            samples.append((time.perf_counter() - started) * 1000)
            if not isinstance(result, ExtractionResult):
                raise BenchError(f"the engine rejected {file.name}: {result}")
        times[file.name] = statistics.median(samples)
    return times
