"""Field and document confidence, and the document status they lead to.

Field confidence = OCR x locator x consensus, then capped by validation:

- OCR: the words the value was read from, half their mean confidence and half their minimum, so
  one badly read character in an amount counts (text-layer words are 1.0).
- locator: the best score among the candidates that agree on the value (an exact label right of
  the value is 1.0; fallbacks and penalties lower it, see `locators`), raised by 0.1 for every
  further kind of locator (region, label, pattern, ...) that found the same value.
- consensus: 0.5 + 0.5 x the winner's share of the support, where a rival value counts in full
  when its support reaches the winner's best single score, fading to nothing at 70% of it. Two
  equally strong different values give 0.75, so the field goes to review; two agreeing locators
  against one strong dissenter give about 0.83; a weak stray find costs nothing.
- validation: a value that does not parse as its type gets at most 0.2.

Document confidence is the minimum over the required fields (a missing required field is 0),
because a document is only as usable as its weakest required value: a mean would let nine sure
fields hide a wrong total, and reviewers need to see exactly the field that is in doubt. With no
required fields it is the mean of the fields found (1.0 when nothing was asked for). Status:
confidence >= review_threshold -> SUCCEEDED; >= confidence_threshold -> REVIEW_REQUIRED; below ->
FAILED; `reasons` names each required field under review_threshold and why.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef, FieldType
from docflow.extraction.model import ReadDocument
from docflow.extraction.result import (
    DocumentStatus,
    ExtractionResult,
    FieldResult,
    LineItemsResult,
)

AGREEMENT_BONUS = 0.1
INVALID_CAP = 0.2
RIVAL_FLOOR = 0.7


def ocr_confidence(confidences: Sequence[float]) -> float:
    if not confidences:
        return 0.0
    return 0.5 * statistics.fmean(confidences) + 0.5 * min(confidences)


def consensus(winner: float, rivals: Sequence[float], reference: float | None = None) -> float:
    """How clearly the winning value (total support `winner`) beats the others (0.5-1.0). A
    rival counts in full from `reference` (the winner's best single score) up, fading out at 70%
    of it, so one strong dissenting locator is felt even when two others agree."""
    reference = winner if reference is None else reference
    if winner <= 0 or reference <= 0:
        return 0.5
    weight = sum(r * _ramp(r / reference) for r in rivals)
    return 0.5 + 0.5 * winner / (winner + weight)


def _ramp(ratio: float) -> float:
    return max(0.0, min(1.0, (ratio - RIVAL_FLOOR) / (1 - RIVAL_FLOOR)))


def field_confidence(
    *,
    word_confidences: Sequence[float],
    best_score: float,
    kinds: int,
    winner_support: float,
    rival_supports: Sequence[float],
    valid: bool,
) -> float:
    locator = min(1.0, best_score + AGREEMENT_BONUS * max(0, kinds - 1))
    agreement = consensus(winner_support, rival_supports, best_score)
    value = ocr_confidence(word_confidences) * locator * agreement
    value = max(0.0, min(1.0, value))
    return value if valid else min(value, INVALID_CAP)


@dataclass(frozen=True, slots=True)
class Scored:
    """A field's confidence and outcome as the status decision sees it."""

    name: str
    required: bool
    confidence: float
    found: bool
    errors: tuple[str, ...] = ()


def document_confidence(fields: Sequence[Scored]) -> float:
    required = [f.confidence if f.found else 0.0 for f in fields if f.required]
    if required:
        return min(required)
    found = [f.confidence for f in fields if f.found]
    return statistics.fmean(found) if found else 1.0


def decide_status(
    fields: Sequence[Scored], definition: ExtractionWorkflowDefinition
) -> tuple[DocumentStatus, float, tuple[str, ...]]:
    """The document's status, confidence and the reasons naming the fields behind it."""
    confidence = document_confidence(fields)
    if confidence >= definition.review_threshold:
        return DocumentStatus.SUCCEEDED, confidence, ()
    status = (
        DocumentStatus.REVIEW_REQUIRED
        if confidence >= definition.confidence_threshold
        else DocumentStatus.FAILED
    )
    reasons = tuple(
        _reason(f, definition.review_threshold)
        for f in fields
        if f.required and (not f.found or f.confidence < definition.review_threshold)
    )
    if not reasons:  # no required field: the mean of the optional ones was too low
        reasons = tuple(
            _reason(f, definition.review_threshold)
            for f in fields
            if f.found and f.confidence < definition.review_threshold
        )
    return status, confidence, reasons


def _reason(field: Scored, threshold: float) -> str:
    if not field.found:
        return f"{field.name}: required field not found"
    detail = f"; {field.errors[0]}" if field.errors else ""
    return f"{field.name}: confidence {field.confidence:.2f} below {threshold:.2f}{detail}"


def decide(
    document: ReadDocument,
    definition: ExtractionWorkflowDefinition,
    fields: Mapping[str, FieldResult],
    tables: Mapping[str, LineItemsResult],
) -> ExtractionResult:
    """The status stage: the document's status and confidence from its fields and tables."""
    scored = [_scored(f, fields, tables) for f in definition.fields]
    status, confidence, reasons = decide_status(scored, definition)
    sources = {page.source.value for page in document.pages}
    return ExtractionResult(
        status=status,
        confidence=round(confidence, 4),
        fields=dict(fields),
        line_items=dict(tables),
        page_count=len(document.pages),
        text_source=sources.pop() if len(sources) == 1 else ("mixed" if sources else ""),
        reasons=reasons,
    )


def _scored(
    field: FieldDef, fields: Mapping[str, FieldResult], tables: Mapping[str, LineItemsResult]
) -> Scored:
    if field.type == FieldType.LINE_ITEMS:
        table = tables[field.name]
        return Scored(field.name, field.required, table.confidence, bool(table.rows), table.errors)
    result = fields[field.name]
    found = result.value is not None or bool(result.raw)
    return Scored(field.name, field.required, result.confidence, found, result.errors)
