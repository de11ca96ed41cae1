"""The reading policy: which OCR engine reads a scanned page, and when a second one re-reads it.

Two tiers: Tesseract (cheap, `tesseract`) and PP-OCR (about 2.7 times the time, but on real
receipts its text holds the labelled values far more often, `ppocr`). A workflow's `reading`
chooses:

- `fast`: Tesseract only.
- `accurate`: PP-OCR only (Tesseract when the process has no PP-OCR engine).
- `auto`: Tesseract first; when a required field is missing or below `review_threshold`, the
  document's OCRed pages are read again with PP-OCR and the fields extracted again, and each field
  keeps the better of its two readings (`merge_readings`).

Text-layer PDF pages are never OCRed: their fields say `text_layer` under every policy, and a
document made only of such pages is never re-read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType, ReadingPolicy
from docflow.extraction.fields.combine import type_family
from docflow.extraction.fields.confidence import INVALID_CAP
from docflow.extraction.model import ReadDocument, TextSource
from docflow.extraction.result import ExtractionResult, FieldResult, LineItemsResult, Reading

__all__ = [
    "family",
    "labelled",
    "merge_readings",
    "needs_second_reading",
    "ocr_pages",
    "pair_confidence",
    "pair_features",
]


def ocr_pages(document: ReadDocument) -> int:
    """How many pages of `document` an OCR engine read (the others came from a text layer)."""
    return sum(1 for page in document.pages if page.source == TextSource.OCR)


def labelled(result: ExtractionResult, document: ReadDocument, engine: Reading) -> ExtractionResult:
    """`result` with each field's `reading` (the text layer, or `engine` for OCRed pages) and
    the pages each reading read."""
    sources = {page.number: page.source for page in document.pages}
    default = engine if ocr_pages(document) else Reading.TEXT_LAYER

    def reading_of(field: FieldResult) -> Reading:
        if field.page is None:
            return default
        return Reading.TEXT_LAYER if sources.get(field.page) == TextSource.TEXT_LAYER else engine

    fields = {
        name: dataclasses.replace(field, reading=reading_of(field).value)
        for name, field in result.fields.items()
    }
    return dataclasses.replace(result, fields=fields, pages_read=_pages_read(document, engine))


def _pages_read(document: ReadDocument, engine: Reading) -> dict[str, int]:
    ocred = ocr_pages(document)
    counts = {Reading.TEXT_LAYER.value: len(document.pages) - ocred, engine.value: ocred}
    return {name: count for name, count in counts.items() if count}


def needs_second_reading(
    result: ExtractionResult, document: ReadDocument, definition: ExtractionWorkflowDefinition
) -> bool:
    """Whether `auto` re-reads: some page was OCRed and a required field is missing or below
    `review_threshold` after the first reading."""
    if definition.reading != ReadingPolicy.AUTO or not ocr_pages(document):
        return False
    for field in definition.fields:
        if not field.required:
            continue
        if field.type == FieldType.LINE_ITEMS:
            table = result.line_items.get(field.name)
            weak = table is None or not table.rows or table.confidence < definition.review_threshold
        else:
            found = result.fields.get(field.name)
            weak = (
                found is None
                or found.value is None
                or found.confidence < definition.review_threshold
            )
        if weak:
            return True
    return False


# How sure a field is once two readings are compared, fitted by `python -m bench.readings`
# (logistic regressions on the fields of the documents `auto` re-read: the generated scans and
# sroie-dev, at most 3 documents per issuer; see docs/accuracy.md). Each case weighs the logit
# of the readings' own confidences and the value's family: `text` (a few words: a name, a
# number), `long` (text of more than `LONG_WORDS` words: an address, a description over several
# lines, which two engines split and join differently) or neither (dates, amounts).
# - agree: both readings found the same value;
# - disagree: they found different values; each is scored as "this one is right" (`own`, `other`,
#   whether it is the second reading, and that per family) and the likelier one is kept;
# - first_only / second_only: one reading found nothing.
TWO_READINGS: dict[str, dict[str, float]] = {
    "agree": {"intercept": 0.724, "first": 0.58, "second": 0.557, "text": -0.242, "long": 0.167},
    "disagree": {
        "intercept": -1.893,
        "own": 0.864,
        "other": -0.158,
        "text": 0.79,
        "long": 0.711,
        "second": -0.385,
        "second_text": -0.2,
        "second_long": -1.453,
    },
    # Too few fields to fit (16 and 12 where one reading alone found a value): the confidence
    # stays as that reading gave it.
    "first_only": {"intercept": 0.0, "first": 1.0, "text": 0.0, "long": 0.0},
    "second_only": {"intercept": 0.0, "second": 1.0, "text": 0.0, "long": 0.0},
}
LONG_WORDS = 6


def logit(probability: float) -> float:
    clipped = min(1 - 1e-3, max(1e-3, probability))
    return math.log(clipped / (1 - clipped))


def family(value: str, *, text: bool) -> str:
    """ "long", "text" or "other" (see `TWO_READINGS`) for a value of a text field or not."""
    if not text:
        return "other"
    return "long" if len(value.split()) > LONG_WORDS else "text"


def pair_features(
    case: str, own: float, other: float | None, *, second: bool, kind: str
) -> dict[str, float]:
    """The numbers `TWO_READINGS[case]` weighs for a value of family `kind` with confidence
    `own` (the other reading's confidence `other`; `second`: the value is the second
    reading's)."""
    text, long = float(kind == "text"), float(kind == "long")
    if case == "agree":
        assert other is not None
        first, then = (other, own) if second else (own, other)
        return {
            "intercept": 1.0,
            "first": logit(first),
            "second": logit(then),
            "text": text,
            "long": long,
        }
    if case == "disagree":
        assert other is not None
        return {
            "intercept": 1.0,
            "own": logit(own),
            "other": logit(other),
            "text": text,
            "long": long,
            "second": float(second),
            "second_text": float(second) * text,
            "second_long": float(second) * long,
        }
    if case == "first_only":
        return {"intercept": 1.0, "first": logit(own), "text": text, "long": long}
    return {"intercept": 1.0, "second": logit(own), "text": text, "long": long}


def pair_confidence(
    case: str,
    own: float,
    other: float | None = None,
    *,
    second: bool,
    kind: str,
    coefficients: Mapping[str, Mapping[str, float]] = TWO_READINGS,
) -> float:
    weights = coefficients[case]
    z = sum(
        weights.get(name, 0.0) * value
        for name, value in pair_features(case, own, other, second=second, kind=kind).items()
    )
    return 1 / (1 + math.exp(-max(-50.0, min(50.0, z))))


def merge_readings(
    first: ExtractionResult,
    second: ExtractionResult,
    definition: ExtractionWorkflowDefinition,
    coefficients: Mapping[str, Mapping[str, float]] = TWO_READINGS,
) -> tuple[dict[str, FieldResult], dict[str, LineItemsResult]]:
    """Field by field, the likelier of two readings of one document, with the confidence the
    comparison gives it (`TWO_READINGS`).

    A value both readings found is kept with `agreement` true, its confidence raised by the
    agreement; where they differ, the value more likely right wins (`agreement` false), its
    confidence lowered by the dissent; where only one found a value, that one is kept
    (`agreement` None), its confidence weighed by the other reading having found nothing. A
    value that does not parse as its type stays capped (`INVALID_CAP`). A table comes from the
    reading that found more rows, the first on a tie.
    """
    texts = {f.name for f in definition.fields if type_family(f.type) == "text"}
    fields = {
        name: _better(field, second.fields.get(name), name in texts, coefficients)
        for name, field in first.fields.items()
    }
    tables = dict(first.line_items)
    for name, table in second.line_items.items():
        if len(table.rows) > len(tables.get(name, table).rows) or name not in tables:
            tables[name] = table
    return fields, tables


def _better(
    first: FieldResult,
    second: FieldResult | None,
    text: bool,
    coefficients: Mapping[str, Mapping[str, float]],
) -> FieldResult:
    def sure(case: str, own: FieldResult, other: FieldResult | None) -> float:
        assert own.value is not None
        return pair_confidence(
            case,
            own.confidence,
            None if other is None else other.confidence,
            second=own is second,
            kind=family(own.value, text=text),
            coefficients=coefficients,
        )

    if second is None or second.value is None:
        if first.value is None:
            return first
        return _with(first, sure("first_only", first, None), None)
    if first.value is None:
        return _with(second, sure("second_only", second, None), None)
    if first.value == second.value:
        return _with(first, sure("agree", first, second), True)
    one, two = sure("disagree", first, second), sure("disagree", second, first)
    return _with(first, one, False) if one >= two else _with(second, two, False)


def _with(field: FieldResult, confidence: float, agreement: bool | None) -> FieldResult:
    if field.errors:
        confidence = min(confidence, INVALID_CAP)
    return dataclasses.replace(field, confidence=round(confidence, 4), agreement=agreement)
