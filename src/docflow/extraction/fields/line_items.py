"""Line-item tables: header row by column labels, cells by alignment, rows by vertical position.

- Header: the row where the most column labels are found (at least two, or the only column); a
  word serves one column, longer labels claiming first ("Unit Price" before "Price").
- Columns: each matched header spans to the midpoint between it and its neighbours; a word belongs
  to the column its centre falls in.
- Rows: each printed row under the header is an item, except that a row with text only in the
  description column (the first string column) continues the previous item's description.
- Table rules and shading that OCR read as words (no digit, word confidence under 0.4) are left
  out of the rows.
- End: the first row starting with a totals word (Total, Subtotal, Tax, Amount Due, ...), a gap of
  more than four rows' height, or the end of the page.
- Cross-check (`check_sum`): the amounts of the rows must add up to one of the totals the
  workflow's profiles name (`sum_targets`: the subtotal, or the total).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

from docflow.extraction.definition import (
    ColumnDef,
    DateOrder,
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
)
from docflow.extraction.fields.labels import LabelHit
from docflow.extraction.fields.layout import Row, compact, join_words
from docflow.extraction.fields.values import parse_value
from docflow.extraction.fields.view import DocumentView, PageView
from docflow.extraction.model import Word
from docflow.extraction.profiles import Profile
from docflow.extraction.result import FieldResult, LineItemsResult

_TOTALS = tuple(
    compact(w)
    for w in (
        "total",
        "subtotal",
        "sub total",
        "grand total",
        "tax",
        "vat",
        "gst",
        "amount due",
        "balance",
        "discount",
        "shipping",
        "rounding",
        "net total",
        "summe",
        "totaal",
    )
)
_MAX_GAP_ROWS = 4
RULE_JUNK_CONFIDENCE = 0.4
MISMATCH_FACTOR = 0.5


@dataclass(frozen=True, slots=True)
class _Column:
    definition: ColumnDef
    lo: float
    hi: float


def extract_line_items(
    pages: tuple[PageView, ...], field: FieldDef, date_order: DateOrder
) -> LineItemsResult:
    """The table of `field` from the first page holding its header row."""
    for page in pages:
        header = _find_header(page, field.columns)
        if header is not None:
            row, columns = header
            items = _collect(page, row, columns, field.columns)
            return _typed(field, columns, items, date_order)
    return LineItemsResult(field.name, (), 0.0, errors=("no table header found",))


def _find_header(page: PageView, columns: list[ColumnDef]) -> tuple[Row, list[_Column]] | None:
    hits: dict[int, list[tuple[ColumnDef, LabelHit]]] = {}
    for column in columns:
        for label in column.labels:
            for hit in page.labels.find(label):
                hits.setdefault(hit.row.index, []).append((column, hit))
    best: tuple[int, Row, list[_Column]] | None = None
    for index, found in sorted(hits.items()):
        placed = _assign(found)
        if len(placed) >= min(2, len(columns)) and (best is None or len(placed) > best[0]):
            best = (len(placed), page.rows[index], _spans(placed))
    return (best[1], best[2]) if best else None


def _assign(found: list[tuple[ColumnDef, LabelHit]]) -> list[tuple[ColumnDef, LabelHit]]:
    used: set[int] = set()
    placed: dict[str, tuple[ColumnDef, LabelHit]] = {}
    for column, hit in sorted(found, key=lambda p: (p[1].distance, p[1].start - p[1].end)):
        words = set(range(hit.start, hit.end))
        if column.name not in placed and not words & used:
            placed[column.name] = (column, hit)
            used |= words
    return sorted(placed.values(), key=lambda p: p[1].box.x0)


def _spans(placed: list[tuple[ColumnDef, LabelHit]]) -> list[_Column]:
    boxes = [hit.box for _, hit in placed]
    cuts = [(left.x1 + right.x0) / 2 for left, right in itertools.pairwise(boxes)]
    edges = [0.0, *cuts, 1.0]
    return [_Column(c, edges[i], edges[i + 1]) for i, (c, _) in enumerate(placed)]


def _collect(
    page: PageView, header: Row, columns: list[_Column], defs: list[ColumnDef]
) -> list[dict[str, list[Word]]]:
    description = next((c.name for c in defs if c.type == FieldType.STRING), None)
    items: list[dict[str, list[Word]]] = []
    pending: list[Word] = []  # description printed before the first item's amounts
    previous = header
    for printed in page.rows[header.index + 1 :]:
        words = tuple(w for w in printed.words if not _is_rule_junk(w))
        if not words:
            continue
        row = replace(printed, words=words)
        gap = row.box.y0 - previous.box.y1
        if gap > _MAX_GAP_ROWS * previous.height or _is_totals(row):
            break
        cells = _cells(row, columns)
        if not cells:
            continue
        previous = row
        if description is not None and set(cells) == {description}:
            if items:
                items[-1].setdefault(description, []).extend(cells[description])
            else:
                pending.extend(cells[description])
            continue
        if pending and description is not None:
            cells[description] = [*pending, *cells.get(description, [])]
            pending = []
        items.append(cells)
    return items


def _is_rule_junk(word: Word) -> bool:
    """A table rule or shading that OCR read as letters ("eee", "a oe ees"): a word without a
    digit that OCR is very unsure of. Printed text on a scan reads far above this."""
    return word.confidence < RULE_JUNK_CONFIDENCE and not any(ch.isdigit() for ch in word.text)


def _cells(row: Row, columns: list[_Column]) -> dict[str, list[Word]]:
    """Words by column; words of text that spill from a string column into a typed column on its
    right (a long description over the quantity) move back to the string column."""
    cells: dict[str, list[Word]] = {}
    for word in row.words:
        column = next((c for c in columns if c.lo <= word.box.cx < c.hi), None)
        if column is not None:
            cells.setdefault(column.definition.name, []).append(word)
    text_columns = [c for c in columns if c.definition.type == FieldType.STRING]
    for column in columns:
        home = [c for c in text_columns if c.hi <= column.lo]
        if column.definition.type == FieldType.STRING or not home:
            continue
        spilled = cells.get(column.definition.name, [])
        while spilled and not _parses(column.definition, spilled):
            if any(ch.isdigit() for ch in spilled[0].text):
                break
            cells.setdefault(home[-1].definition.name, []).append(spilled.pop(0))
    return {name: words for name, words in cells.items() if words}


def _parses(column: ColumnDef, words: list[Word]) -> bool:
    return parse_value(column.type, join_words(words)).ok


def _is_totals(row: Row) -> bool:
    head = compact(join_words(row.words[:3]))
    return any(head.startswith(key) for key in _TOTALS)


def _typed(
    field: FieldDef, columns: list[_Column], items: list[dict[str, list[Word]]], order: DateOrder
) -> LineItemsResult:
    rows: list[dict[str, str | None]] = []
    errors: list[str] = []
    cells_ok = cells_all = 0
    confidences: list[float] = []
    for number, item in enumerate(items, 1):
        values: dict[str, str | None] = {}
        for column in field.columns:
            words = item.get(column.name, [])
            confidences.extend(w.confidence for w in words)
            values[column.name] = None
            if not words:
                if column.required:
                    errors.append(f"row {number} {column.name}: missing")
                continue
            parsed = parse_value(column.type, join_words(words), date_order=order)
            cells_all += 1
            if parsed.ok:
                cells_ok += 1
                values[column.name] = parsed.value
            else:
                errors.append(f"row {number} {column.name}: {parsed.error}")
        rows.append(values)
    coverage = (len(columns) / len(field.columns)) ** 0.5
    valid = cells_ok / cells_all if cells_all else 0.0
    ocr = statistics.fmean(confidences) if confidences else 0.0
    confidence = round(ocr * coverage * valid, 4) if rows else 0.0
    if not rows:
        errors.append("no rows under the table header")
    return LineItemsResult(field.name, tuple(rows), confidence, tuple(errors))


def amount_column(field: FieldDef) -> str | None:
    """The column holding each row's amount: one named like an amount, else the last money one."""
    money = [c.name for c in field.columns if c.type in (FieldType.MONEY, FieldType.DECIMAL)]
    for name in ("amount", "line_total", "total", "line_amount", "net_amount"):
        if name in money:
            return name
    return money[-1] if money else None


def check_sum(result: LineItemsResult, field: FieldDef, targets: dict[str, str]) -> LineItemsResult:
    """Compare the sum of the amounts with the first of `targets` (name -> value); any target it
    equals passes, otherwise the table loses confidence and says which sum did not match."""
    column = amount_column(field)
    if column is None or not result.rows or not targets:
        return result
    amounts = [row.get(column) for row in result.rows]
    total = sum((Decimal(a) for a in amounts if a is not None), Decimal(0))
    if any(Decimal(value) == total for value in targets.values()):
        return result
    name, value = next(iter(targets.items()))
    error = f"sum of {column} ({total:.2f}) does not match {name} ({value})"
    return replace(
        result,
        confidence=round(result.confidence * MISMATCH_FACTOR, 4),
        errors=(*result.errors, error),
    )


def read_tables(
    view: DocumentView,
    definition: ExtractionWorkflowDefinition,
    profile: Profile,
    fields: Mapping[str, FieldResult],
) -> dict[str, LineItemsResult]:
    """Line-item tables, each checked against the first of the profile's sum targets found."""
    targets = {
        name: value
        for name in profile.sum_targets
        if name in fields and (value := fields[name].value) is not None
    }
    tables = {}
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            table = extract_line_items(view.pages, field, definition.date_order)
            tables[field.name] = check_sum(table, field, targets)
    return tables
