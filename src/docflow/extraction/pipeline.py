"""The extraction pipeline: bytes plus an extraction workflow definition in, a typed result out.

The engine's table of contents. Each stage is a pure function of the stages before it, typed
(frozen dataclasses, or mappings of them, in and out); a stage that stops returns
`Rejected(code, reason)`.

| stage       | in -> out                                              | where              |
|-------------|--------------------------------------------------------|--------------------|
| sniff       | bytes -> `DocumentKind` or `Rejected`                  | `sniff`            |
| read        | bytes, kind -> `ReadDocument` (text layer or OCR, page | `readers`          |
|             | by page) or `Rejected`                                 |                    |
| layout      | `ReadDocument` -> `DocumentView`: rows and a label     | `fields.view`      |
|             | index per page                                         |                    |
| locate      | view, definition, profiles -> `Located`: candidates    | `fields.locate`    |
|             | from template regions, label anchors, patterns, and    |                    |
|             | defaults by field name (profiles) and position; each   |                    |
|             | parsed and validated against its type as it is found   |                    |
| combine     | `Located` -> `Chosen`: one value per field, grand      | `fields.combine`   |
|             | totals cross-checked against the amount paid           |                    |
| confidence  | `Chosen` -> a `FieldResult` with its confidence each   | `fields.combine`,  |
|             |                                                        | `fields.confidence`|
| line_items  | view -> tables, cross-checked against the subtotal or  | `fields.line_items`|
|             | total                                                  |                    |
| status      | fields and tables -> `ExtractionResult`: document      | `fields.confidence`|
|             | confidence and SUCCEEDED / REVIEW_REQUIRED / FAILED    |                    |
| reread      | under `reading: auto`, when a required field is weak:  | `reading`          |
|             | the OCRed pages again with PP-OCR, every stage again,  |                    |
|             | and each field's better reading kept (`merge`)         |                    |

The workflow's profiles (`profiles`) are merged once, before the stages that use them. Each
stage's wall time lands in `ExtractionResult.timings_ms` under its name, plus `total`. An
unexpected exception inside any stage comes back as `Rejected(INTERNAL_ERROR)` naming the stage
instead of propagating, so one document never brings down a batch.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import structlog

from docflow.extraction.definition import ExtractionWorkflowDefinition, ReadingPolicy
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.fields.combine import choose_values, score_fields
from docflow.extraction.fields.confidence import decide
from docflow.extraction.fields.line_items import read_tables
from docflow.extraction.fields.locate import locate
from docflow.extraction.fields.view import view_document
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, ReadDocument, plain_text
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.profiles import merge
from docflow.extraction.readers import read_pages
from docflow.extraction.reading import labelled, merge_readings, needs_second_reading, ocr_pages
from docflow.extraction.result import MAX_TEXT, ExtractionResult, Reading
from docflow.extraction.sniff import sniff_kind

__all__ = ["extract_document", "extract_fields", "extract_read_document", "read_and_extract"]

log = structlog.get_logger(__name__)

P = ParamSpec("P")
T = TypeVar("T")
Timings = dict[str, float]


def extract_document(
    data: bytes,
    definition: ExtractionWorkflowDefinition,
    *,
    ocr: OcrEngine,
    second_ocr: OcrEngine | None = None,
    limits: EngineLimits = EngineLimits(),
) -> ExtractionResult | Rejected:
    """Read `data` and extract the fields of `definition` from it; never raises.

    `ocr` is the Tesseract tier, `second_ocr` the PP-OCR tier (None: no second tier, so every
    policy reads with `ocr`); `definition.reading` says which reads (see `reading`)."""
    return read_and_extract(data, definition, ocr=ocr, second_ocr=second_ocr, limits=limits)[0]


def first_reading(
    definition: ExtractionWorkflowDefinition, second_ocr: OcrEngine | None
) -> Reading:
    """The OCR tier that reads a document's scanned pages first: PP-OCR for an `accurate`
    workflow when it is installed, else Tesseract."""
    accurate = definition.reading == ReadingPolicy.ACCURATE and second_ocr is not None
    return Reading.PPOCR if accurate else Reading.TESSERACT


def read_and_extract(
    data: bytes,
    definition: ExtractionWorkflowDefinition,
    *,
    ocr: OcrEngine,
    second_ocr: OcrEngine | None = None,
    limits: EngineLimits = EngineLimits(),
) -> tuple[ExtractionResult | Rejected, ReadDocument | None]:
    """`extract_document`, with the pages of the first reading (None when none was read), for
    a caller that works on the text afterwards (the language-model gap-fill)."""
    started = time.perf_counter()
    timings: Timings = {}
    tier = first_reading(definition, second_ocr)
    engine = second_ocr if tier == Reading.PPOCR else ocr
    assert engine is not None
    try:
        kind = timed(timings, "sniff", sniff_kind, data)
        if isinstance(kind, Rejected):
            return kind, None
        document = timed(timings, "read", read_pages, data, kind, ocr=engine, limits=limits)
    except Exception as exc:  # a reader bug must not take the batch down with this document
        return _internal(timings, exc), None
    if isinstance(document, Rejected):
        return document, None
    result = extract_read_document(document, definition)
    if isinstance(result, ExtractionResult):
        result = labelled(result, document, tier)
        if second_ocr is not None and needs_second_reading(result, document, definition):
            result = _read_again(data, kind, document, definition, result, second_ocr, limits)
        result = dataclasses.replace(result, text=plain_text(document, MAX_TEXT))
        result.timings_ms.update(timings)
        result.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 3)
    return result, document


def _read_again(
    data: bytes,
    kind: DocumentKind,
    document: ReadDocument,
    definition: ExtractionWorkflowDefinition,
    first: ExtractionResult,
    second_ocr: OcrEngine,
    limits: EngineLimits,
) -> ExtractionResult:
    """The `auto` policy's second tier: read the document again with PP-OCR (text-layer pages
    come from their text layer again, at no OCR cost), extract again and keep each field's
    better reading. A second reading that fails leaves the first result's fields as they were;
    its pages still count in `pages_read` (the attempt cost its time)."""
    timings: Timings = {}
    attempted = dataclasses.replace(
        first, pages_read={**first.pages_read, Reading.PPOCR.value: ocr_pages(document)}
    )
    try:
        again = timed(timings, "reread", read_pages, data, kind, ocr=second_ocr, limits=limits)
    except Exception as exc:  # the first reading stands; say why the second is missing
        _internal(timings, exc)
        return attempted
    if isinstance(again, Rejected):
        log.info("extraction.reread_rejected", code=again.code, reason=again.reason)
        return attempted
    second = extract_read_document(again, definition)
    if not isinstance(second, ExtractionResult):
        return attempted
    second = labelled(second, again, Reading.PPOCR)
    fields, tables = merge_readings(first, second, definition)
    result = timed(timings, "merge", decide, document, definition, fields, tables)
    pages_read = dict(first.pages_read)
    pages_read[Reading.PPOCR.value] = ocr_pages(again)
    result = dataclasses.replace(result, pages_read=pages_read)
    result.timings_ms.update(first.timings_ms)
    result.timings_ms.update({f"{stage}_ppocr": ms for stage, ms in second.timings_ms.items()})
    result.timings_ms.update(timings)
    return result


def extract_read_document(
    document: ReadDocument, definition: ExtractionWorkflowDefinition
) -> ExtractionResult | Rejected:
    """The stages after reading, for callers that already hold the pages; never raises."""
    timings: Timings = {}
    try:
        result = extract_fields(document, definition, timings)
    except Exception as exc:  # see extract_document: one bad document is one Rejected
        return _internal(timings, exc)
    log.debug(
        "extraction.extracted",
        pages=result.page_count,
        status=result.status.value,
        confidence=result.confidence,
    )
    return result


def extract_fields(
    document: ReadDocument,
    definition: ExtractionWorkflowDefinition,
    timings: Timings | None = None,
) -> ExtractionResult:
    """The stages after reading, in order (pure: the same document and definition give the same
    result). `timings` receives each stage's time as the stage ends, so after an engine bug,
    which raises here, its last entry names the stage that failed (`extract_read_document`
    turns that into `Rejected`)."""
    timings = {} if timings is None else timings
    profile = merge(definition.selected_profiles)
    view = timed(timings, "layout", view_document, document)
    located = timed(timings, "locate", locate, view, definition, profile)
    chosen = timed(timings, "combine", choose_values, located, view, definition, profile)
    fields = timed(timings, "confidence", score_fields, chosen)
    tables = timed(timings, "line_items", read_tables, view, definition, profile, fields)
    result = timed(timings, "status", decide, document, definition, fields, tables)
    result.timings_ms.update(timings)
    return result


def timed(
    timings: Timings, stage: str, run: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """Run one stage and record its wall time in milliseconds under `stage` (also when it fails,
    so the last name recorded is the stage that failed)."""
    started = time.perf_counter()
    try:
        return run(*args, **kwargs)
    finally:
        timings[stage] = round((time.perf_counter() - started) * 1000, 3)


def _internal(timings: Timings, exc: Exception) -> Rejected:
    stage = next(reversed(timings), "engine")
    # Where it failed, not the message: messages may quote the document's text.
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    log.error("extraction.stage_failed", stage=stage, error=type(exc).__name__, where=where)
    return Rejected(RejectCode.INTERNAL_ERROR, f"the {stage} stage failed ({type(exc).__name__})")
