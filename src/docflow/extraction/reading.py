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

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType, ReadingPolicy
from docflow.extraction.model import ReadDocument, TextSource
from docflow.extraction.result import ExtractionResult, FieldResult, LineItemsResult, Reading

__all__ = [
    "labelled",
    "merge_readings",
    "needs_second_reading",
    "ocr_pages",
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


def merge_readings(
    first: ExtractionResult, second: ExtractionResult
) -> tuple[dict[str, FieldResult], dict[str, LineItemsResult]]:
    """Field by field, the better-supported of two readings of one document.

    A value both readings found is kept with `agreement` true (the more confident of the two
    copies; two engines reading the same value independently is evidence the calibration of
    confidences may use). Where they differ, the more confident one wins and `agreement` is
    false; where only one found a value, that one is kept (`agreement` stays None). A table
    comes from the reading that found more rows, the first on a tie.
    """
    fields = {name: _better(field, second.fields.get(name)) for name, field in first.fields.items()}
    tables = dict(first.line_items)
    for name, table in second.line_items.items():
        if len(table.rows) > len(tables.get(name, table).rows) or name not in tables:
            tables[name] = table
    return fields, tables


def _better(first: FieldResult, second: FieldResult | None) -> FieldResult:
    if second is None or second.value is None:
        return first
    if first.value is None:
        return second
    agree = _same(first, second)
    winner = first if first.confidence >= second.confidence else second
    return dataclasses.replace(winner, agreement=agree)


def _same(first: FieldResult, second: FieldResult) -> bool:
    return first.value == second.value
