"""Which fields go to the model, and which lines of the document go with them (pure).

The fields asked for are the definition's scalar fields that the readers left missing (task
`extract`) or found below `review_threshold` (task `verify`: the model confirms or corrects the
value OCR doubts). Their lines are chosen by anchors: the rows holding one of the field's
labels (its label locators, else its profile's default wordings, else its own name; found by
the engine's own label index, OCR-tolerantly on the first `FUZZY_PAGES` pages and exactly
beyond), the row of the value OCR chose, the top of page 1 for a field the profile takes from
the letterhead (its first three rows for a name, six for an address, counting only rows that
print at least `PRINTED_CHARACTERS` letters or digits: the specks and rules OCR reads above and
between a letterhead's lines, "," or "~", are sent with it but do not use up its rows), and
rows printing a date for a date field; then the row under each label row (a value printed below
its label). Anchors come first, those rows next, each in document order, until `budget_tokens`
(estimated at four characters a token) is spent; the lines are sent in document order. The
whole text is never sent: `full_tokens` says what sending it would cost.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from docflow.extraction.definition import (
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
    LabelLocator,
)
from docflow.extraction.fields.confidence import ocr_confidence
from docflow.extraction.fields.layout import Row
from docflow.extraction.fields.view import DocumentView, view_document
from docflow.extraction.model import ReadDocument
from docflow.extraction.profiles import Profile, merge
from docflow.kit.durable_json import durable

EXTRACT = "extract"
VERIFY = "verify"
# Labels are looked up OCR-tolerantly (as the engine does) on the first pages only: a tolerant
# lookup costs the page's words, so on a long document with many labels it would cost the
# engine's own time again; further pages take the exact lookup, a dictionary's.
FUZZY_PAGES = 5
NAME_ROWS = 3  # the issuer's name is among the first rows of page 1
LETTERHEAD_ROWS = 6  # its address under it
PRINTED_CHARACTERS = 3  # a row with fewer letters or digits is a speck, not a letterhead line
_DATE = re.compile(r"\d{1,4}\s?[/.\-]\s?(\d{1,2}|[A-Za-z]{3,9})\s?[/.\-]\s?\d{2,4}")


@durable
@dataclass(frozen=True, slots=True)
class Line:
    """A printed row: its page, text, box (normalised page coordinates) and the OCR
    confidence of its words (`ocr_confidence`; a text layer's are 1.0)."""

    page: int
    text: str
    box: tuple[float, float, float, float]
    confidence: float = 1.0


@durable
@dataclass(frozen=True, slots=True)
class Gap:
    """A field to ask for: `task` extract (missing) or verify (`ocr_value` is doubted)."""

    name: str
    task: str
    ocr_value: str | None
    tier: str


@durable
@dataclass(frozen=True, slots=True)
class GapRequest:
    """What the gap-fill step needs of a document, made by the extract step: the fields,
    the chosen lines, the hash of the whole normalised text and its estimated tokens, and
    the SHA-256 of the document's bytes (`document_hash`)."""

    gaps: tuple[Gap, ...]
    lines: tuple[Line, ...]
    text_hash: str
    full_tokens: int
    context_tokens: int
    document_hash: str = ""

    @property
    def document_key(self) -> str:
        """What identifies the document in the result cache: its bytes' hash (a request
        recorded before it was kept falls back to the text's)."""
        return self.document_hash or self.text_hash


def tokens(text: str) -> int:
    """Estimated tokens of `text` (four characters a token, at least one a line)."""
    return len(text) // 4 + 1


def weak_fields(
    definition: ExtractionWorkflowDefinition, fields: Mapping[str, Mapping[str, Any]]
) -> list[Gap]:
    """The scalar fields missing (extract) or under `review_threshold` (verify), each with
    its tier: the field's own `complexity_tier`, else the workflow's."""
    gaps = []
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            continue
        result = fields.get(field.name) or {}
        value = result.get("value")
        tier = (field.complexity_tier or definition.complexity_tier).value
        if value is None:
            gaps.append(Gap(field.name, EXTRACT, None, tier))
        elif float(result.get("confidence") or 0.0) < definition.review_threshold:
            gaps.append(Gap(field.name, VERIFY, str(value), tier))
    return gaps


def gap_request(
    document: ReadDocument,
    definition: ExtractionWorkflowDefinition,
    fields: Mapping[str, Mapping[str, Any]],
    *,
    budget_tokens: int,
    document_hash: str = "",
) -> GapRequest | None:
    """The request for `document`'s weak fields; None when every field is sure.
    `document_hash`: the SHA-256 of the file's bytes (the result cache's key; without it,
    the text's hash stands in)."""
    gaps = weak_fields(definition, fields)
    if not gaps:
        return None
    view = view_document(document)
    rows = Rows(view)
    profile = merge(definition.selected_profiles)
    anchors: set[int] = set()
    labelled: set[int] = set()
    for gap in gaps:
        field = definition.field(gap.name)
        found, labels = _anchors(rows, field, profile, fields.get(gap.name) or {})
        anchors |= found
        labelled |= labels
    chosen = _within_budget(rows.all, anchors, labelled, budget_tokens)
    lines = tuple(_line(rows.all[i]) for i in chosen)
    return GapRequest(
        gaps=tuple(gaps),
        lines=lines,
        text_hash=text_hash(row.text for row in rows.all),
        full_tokens=sum(tokens(row.text) for row in rows.all),
        context_tokens=sum(tokens(line.text) for line in lines),
        document_hash=document_hash,
    )


def document_lines(document: ReadDocument) -> tuple[Line, ...]:
    """Every printed row of `document` (what sending the whole text would send)."""
    return tuple(_line(row) for page in view_document(document).pages for row in page.rows)


def text_hash(texts: Iterable[str]) -> str:
    """SHA-256 of the text, case and spacing normalised (the result cache's key part)."""
    normalised = "\n".join(" ".join(t.casefold().split()) for t in texts)
    return hashlib.sha256(normalised.encode()).hexdigest()


def labels_of(field: FieldDef, profile: Profile) -> tuple[str, ...]:
    """The wordings that label `field` on a page."""
    declared = tuple(
        label
        for locator in field.locators
        if isinstance(locator, LabelLocator)
        for label in locator.labels
    )
    if declared:
        return declared
    if not field.locators and field.name in profile.labels:
        return tuple(profile.labels[field.name])
    return (field.name.replace("_", " "),)


class Rows:
    """A document's rows in order, with what every field's anchors look up: each page's label
    index (the engine's own, `fields.labels`), each row's position, and the rows printing a
    date (found once, whatever the number of date fields)."""

    def __init__(self, view: DocumentView) -> None:
        self.view = view
        self.all = [row for page in view.pages for row in page.rows]
        self.position = {(row.page, row.index): i for i, row in enumerate(self.all)}
        self.dated = {i for i, row in enumerate(self.all) if _DATE.search(row.text)}


def _anchors(
    rows: Rows, field: FieldDef, profile: Profile, result: Mapping[str, Any]
) -> tuple[set[int], set[int]]:
    """The rows a field's value may be on, and among them the rows holding its label."""
    labelled = {
        rows.position[(hit.row.page, hit.row.index)]
        for n, page in enumerate(rows.view.pages)
        for label in labels_of(field, profile)
        for hit in (page.labels.find(label) if n < FUZZY_PAGES else page.labels.find_exact(label))
    }
    found = set(labelled)
    box, number = result.get("box"), result.get("page")
    chosen = rows.view.page(number) if box and isinstance(number, int) else None
    if chosen is not None and box:
        found.update(
            rows.position[(row.page, row.index)]
            for row in chosen.rows
            if row.box.y0 <= box["y1"] and box["y0"] <= row.box.y1
        )
    if field.type == FieldType.DATE:
        found |= rows.dated
    top = NAME_ROWS if field.name in profile.issuer_names else 0
    if field.name in profile.issuer_addresses:
        top = LETTERHEAD_ROWS
    first = rows.view.page(1)
    counted = 0
    for row in first.rows if first is not None else ():
        if counted >= top:
            break
        found.add(rows.position[(1, row.index)])
        counted += sum(c.isalnum() for c in row.text) >= PRINTED_CHARACTERS
    return found, labelled


def _within_budget(
    rows: Sequence[Row], anchors: set[int], labelled: set[int], budget: int
) -> list[int]:
    """Anchors first, then the row under each label (a value printed below its label), in
    document order, as long as the budget lasts."""
    below = {
        i + 1
        for i in labelled
        if i + 1 < len(rows) and i + 1 not in anchors and rows[i + 1].page == rows[i].page
    }
    chosen, spent = [], 0
    for i in [*sorted(anchors), *sorted(below)]:
        cost = tokens(rows[i].text)
        if spent + cost > budget:
            continue
        chosen.append(i)
        spent += cost
    return sorted(chosen)


def _line(row: Row) -> Line:
    b = row.box
    return Line(
        row.page,
        row.text,
        (round(b.x0, 4), round(b.y0, 4), round(b.x1, 4), round(b.y1, 4)),
        round(ocr_confidence([word.confidence for word in row.words]), 4),
    )
