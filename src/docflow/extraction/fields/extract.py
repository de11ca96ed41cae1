"""Field extraction over a read document: locate, combine and score, tables, status.

`extract_fields` is pure: the same document and definition always give the same result. Its
stages are exposed so the pipeline can time them; `timings_ms` of the result holds each stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from docflow.extraction.definition import (
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
    LabelLocator,
    PatternLocator,
    RegionLocator,
)
from docflow.extraction.fields.address import address_candidate
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.combine import combine
from docflow.extraction.fields.confidence import Scored, decide_status
from docflow.extraction.fields.defaults import (
    ADDRESS_NAMES,
    COMPANY_NAMES,
    currency_candidates,
    date_candidates,
    default_locators,
    is_typed_date,
)
from docflow.extraction.fields.line_items import check_sum, extract_line_items
from docflow.extraction.fields.locators import label_candidates, pattern_candidates
from docflow.extraction.fields.payment import payment_candidate
from docflow.extraction.fields.position import company_candidate, looks_like_name
from docflow.extraction.fields.regions import region_candidates
from docflow.extraction.fields.view import DocumentView, view_document
from docflow.extraction.model import ReadDocument
from docflow.extraction.result import ExtractionResult, FieldResult, LineItemsResult

T = TypeVar("T")
GRAND_TOTALS = frozenset(
    {"total", "total_amount", "grand_total", "amount_due", "total_due", "balance_due"}
)
_SUM_TARGETS = ("subtotal", "sub_total", "net_total", "total", "total_amount", "amount_due")


def extract_fields(
    document: ReadDocument, definition: ExtractionWorkflowDefinition
) -> ExtractionResult:
    """Every field of `definition` from `document`, with confidences and the document status."""
    timings: dict[str, float] = {}
    view = timed(timings, "layout", lambda: view_document(document))
    candidates = timed(timings, "locate", lambda: locate(view, definition))
    fields = timed(timings, "combine", lambda: score(definition, candidates, view))
    tables = timed(timings, "line_items", lambda: read_tables(view, definition, fields))
    result = timed(timings, "status", lambda: decide(document, definition, fields, tables))
    result.timings_ms.update(timings)
    return result


def timed(timings: dict[str, float], stage: str, run: Callable[[], T]) -> T:
    """Run one stage and record its wall time in milliseconds under `stage`."""
    started = time.perf_counter()
    try:
        return run()
    finally:
        timings[stage] = round((time.perf_counter() - started) * 1000, 3)


def locate(
    view: DocumentView, definition: ExtractionWorkflowDefinition
) -> dict[str, list[Candidate]]:
    """Candidates for every scalar field, from its locators or, if it has none, the defaults."""
    return {
        field.name: field_candidates(view, FieldSpec(field, definition.date_order))
        for field in definition.fields
        if field.type != FieldType.LINE_ITEMS
    }


def field_candidates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    field = spec.field
    found: list[Candidate] = []
    for locator in field.locators or default_locators(field):
        if isinstance(locator, RegionLocator):
            found.extend(region_candidates(view, spec, locator))
        elif isinstance(locator, LabelLocator):
            found.extend(label_candidates(view, spec, locator))
        elif isinstance(locator, PatternLocator):
            found.extend(pattern_candidates(view, spec, locator))
    if not field.locators:
        found.extend(_defaults_by_position(view, spec))
    if field.name in COMPANY_NAMES:
        found = [c for c in found if looks_like_name(c.raw)]
    if field.name == "currency":
        found.extend(currency_candidates(view, spec))
    return found


def _defaults_by_position(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    field = spec.field
    found: list[Candidate | None] = []
    if field.name in COMPANY_NAMES:
        found.append(company_candidate(view, spec))
    if field.name in ADDRESS_NAMES:
        found.append(address_candidate(view, spec))
    if is_typed_date(field):
        found.extend(date_candidates(view, spec))
    return [c for c in found if c is not None]


def score(
    definition: ExtractionWorkflowDefinition,
    candidates: dict[str, list[Candidate]],
    view: DocumentView,
) -> dict[str, FieldResult]:
    """One result per field; grand totals are cross-checked against the amount paid."""
    results = {}
    for name, found in candidates.items():
        field = definition.field(name)
        grand = _is_grand_total(field)
        paid = payment_candidate(view, FieldSpec(field, definition.date_order)) if grand else None
        results[name] = combine(name, found, grand_total=grand, paid=paid)
    return results


def _is_grand_total(field: FieldDef) -> bool:
    return field.type == FieldType.MONEY and field.name in GRAND_TOTALS


def read_tables(
    view: DocumentView, definition: ExtractionWorkflowDefinition, fields: dict[str, FieldResult]
) -> dict[str, LineItemsResult]:
    """Line-item tables, each checked against the subtotal or total when both exist."""
    targets = {
        name: fields[name].value
        for name in _SUM_TARGETS
        if name in fields and fields[name].value is not None
    }
    tables = {}
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            table = extract_line_items(view.pages, field, definition.date_order)
            tables[field.name] = check_sum(table, field, _str_values(targets))
    return tables


def _str_values(targets: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in targets.items() if v is not None}


def decide(
    document: ReadDocument,
    definition: ExtractionWorkflowDefinition,
    fields: dict[str, FieldResult],
    tables: dict[str, LineItemsResult],
) -> ExtractionResult:
    scored = [_scored(f, fields, tables) for f in definition.fields]
    status, confidence, reasons = decide_status(scored, definition)
    sources = {page.source.value for page in document.pages}
    return ExtractionResult(
        status=status,
        confidence=round(confidence, 4),
        fields=fields,
        line_items=tables,
        page_count=len(document.pages),
        text_source=sources.pop() if len(sources) == 1 else ("mixed" if sources else ""),
        reasons=reasons,
    )


def _scored(
    field: FieldDef, fields: dict[str, FieldResult], tables: dict[str, LineItemsResult]
) -> Scored:
    if field.type == FieldType.LINE_ITEMS:
        table = tables[field.name]
        return Scored(field.name, field.required, table.confidence, bool(table.rows), table.errors)
    result = fields[field.name]
    found = result.value is not None or bool(result.raw)
    return Scored(field.name, field.required, result.confidence, found, result.errors)
