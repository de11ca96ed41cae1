"""Run an extractor over a labelled dataset, in parallel, and compare every labelled field.

The runner does not import the engine: it takes a factory of extract functions, one per worker
thread, so each thread owns its OCR engine (Tesseract handles are not shared across threads) and
tests can drive the scoring with hand-made results.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import structlog

from docflow.evaluation.compare import Comparison, compare_rows, compare_value
from docflow.evaluation.dataset import LabelledDocument
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.result import DocumentStatus, ExtractionResult

log = structlog.get_logger(__name__)

Extract = Callable[[bytes], ExtractionResult | Rejected]
ExtractFactory = Callable[[], Extract]


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    """The verdict on one document: its status, why it was rejected if it was, every field."""

    name: str
    status: DocumentStatus
    rejected: str | None
    comparisons: tuple[Comparison, ...]
    seconds: float
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EvalRun:
    outcomes: tuple[DocumentOutcome, ...]
    wall_seconds: float
    skipped_fields: tuple[str, ...] = ()  # labelled names the workflow does not define


def run_evaluation(
    definition: ExtractionWorkflowDefinition,
    documents: Sequence[LabelledDocument],
    make_extract: ExtractFactory,
    *,
    workers: int = 1,
) -> EvalRun:
    """Extract every document with `workers` threads and compare it with its label."""
    local = threading.local()

    def work(document: LabelledDocument) -> DocumentOutcome:
        extract = getattr(local, "extract", None)
        if extract is None:
            extract = local.extract = make_extract()
        return evaluate_document(definition, document, extract)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        outcomes = tuple(pool.map(work, documents))
    wall = time.perf_counter() - started
    defined = {f.name for f in definition.fields}
    skipped = sorted({n for d in documents for n in d.fields if n not in defined})
    if skipped:
        log.warning("eval.labels_not_in_workflow", fields=skipped)
    return EvalRun(outcomes, wall, tuple(skipped))


def evaluate_document(
    definition: ExtractionWorkflowDefinition, document: LabelledDocument, extract: Extract
) -> DocumentOutcome:
    """Extract one document and compare it; a rejection or a crash makes every field wrong."""
    started = time.perf_counter()
    try:
        outcome: ExtractionResult | Rejected = extract(document.path.read_bytes())
    except Exception as exc:  # a crash must not abort a whole evaluation run
        log.exception("eval.document_crashed", document=document.name)
        outcome = Rejected(code=RejectCode.INTERNAL_ERROR, reason=f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    result = outcome if isinstance(outcome, ExtractionResult) else None
    comparisons = compare_document(definition, document, result)
    if result is None:
        rejected = outcome if isinstance(outcome, Rejected) else None
        reason = f"{rejected.code}: {rejected.reason}" if rejected else "rejected"
        return DocumentOutcome(document.name, DocumentStatus.FAILED, reason, comparisons, seconds)
    return DocumentOutcome(
        document.name, result.status, None, comparisons, seconds, tuple(result.reasons)
    )


def compare_document(
    definition: ExtractionWorkflowDefinition,
    document: LabelledDocument,
    result: ExtractionResult | None,
) -> tuple[Comparison, ...]:
    """Compare every labelled field the workflow defines; None stands for a rejected document."""
    comparisons: list[Comparison] = []
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            if document.line_items is None:
                continue
            table = result.line_items.get(field.name) if result else None
            found = list(table.rows) if table is not None else None
            confidence = table.confidence if table is not None else None
            comparisons.append(
                compare_rows(field.name, field.columns, document.line_items, found, confidence)
            )
            continue
        expected = document.fields.get(field.name)
        if expected is None:
            continue
        got = result.fields.get(field.name) if result else None
        value, confidence = (got.value, got.confidence) if got else (None, None)
        comparisons.append(compare_value(field.name, field.type, expected, value, confidence))
    return tuple(comparisons)
