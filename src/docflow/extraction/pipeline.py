"""The extraction pipeline: bytes plus an extraction workflow definition in, a typed result out.

An explicit, ordered list of stages, each a pure function of the previous stage's output:

1. read      bytes -> `ReadDocument` (text layer or OCR) or `Rejected`
2. layout    words -> rows and a label index per page
3. locate    every locator of every field -> candidate values, each normalised and validated
             against the field's type as it is found (a typed value is recognised by parsing)
4. combine   candidates -> one `FieldResult` per field, with its confidence
5. line_items  tables, cross-checked against the subtotal or total
6. status    document confidence from the required fields -> SUCCEEDED / REVIEW_REQUIRED / FAILED

Each stage's wall time lands in `ExtractionResult.timings_ms`. A document the engine cannot read
comes back as `Rejected` with a stable code; an unexpected exception inside any stage comes back
as `Rejected(INTERNAL_ERROR)` instead of propagating, so one document never brings down a batch.
"""

from __future__ import annotations

import time
import traceback

import structlog

from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.fields import extract_fields
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import ReadDocument
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.readers import read_document
from docflow.extraction.result import ExtractionResult

__all__ = ["extract_document", "extract_read_document"]

log = structlog.get_logger(__name__)


def extract_document(
    data: bytes,
    definition: ExtractionWorkflowDefinition,
    *,
    ocr: OcrEngine,
    limits: EngineLimits = EngineLimits(),
) -> ExtractionResult | Rejected:
    """Read `data` and extract the fields of `definition` from it; never raises."""
    started = time.perf_counter()
    try:
        read = read_document(data, ocr=ocr, limits=limits)
    except Exception as exc:  # a reader bug must not take the batch down with this document
        return _internal("read", exc)
    read_ms = round((time.perf_counter() - started) * 1000, 3)
    if isinstance(read, Rejected):
        return read
    result = extract_read_document(read, definition)
    if isinstance(result, ExtractionResult):
        result.timings_ms["read"] = read_ms
        result.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 3)
    return result


def extract_read_document(
    document: ReadDocument, definition: ExtractionWorkflowDefinition
) -> ExtractionResult | Rejected:
    """The stages after reading, for callers that already hold the pages; never raises."""
    try:
        result = extract_fields(document, definition)
    except Exception as exc:  # see extract_document: one bad document is one Rejected
        return _internal("fields", exc)
    log.debug(
        "extraction.extracted",
        pages=result.page_count,
        status=result.status.value,
        confidence=result.confidence,
    )
    return result


def _internal(stage: str, exc: Exception) -> Rejected:
    # Where it failed, not the message: messages may quote the document's text.
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    log.error("extraction.stage_failed", stage=stage, error=type(exc).__name__, where=where)
    return Rejected(RejectCode.INTERNAL_ERROR, f"the {stage} stage failed ({type(exc).__name__})")
