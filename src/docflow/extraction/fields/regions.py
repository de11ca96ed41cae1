"""Template regions: the words inside a box drawn on the template page.

With an anchor, the box follows the anchor: the anchor phrase is looked up on the page (the
occurrence nearest its template position), and the box is moved by the offset between the anchor's
template box and its found box and scaled by the ratio of their sizes, so a shifted or rescaled
scan still lands on the value. If the anchor is not found, the template box is used as drawn and
the find is less certain.
"""

from __future__ import annotations

from docflow.extraction.definition import Box, RegionLocator
from docflow.extraction.fields.candidates import Candidate, FieldSpec, read_value
from docflow.extraction.fields.layout import join_words
from docflow.extraction.fields.view import DocumentView, PageView
from docflow.extraction.model import Rect

ANCHOR_MISSING = 0.7
INVALID = 0.25
_PAD = 0.02  # of the box size, for boxes drawn tight around the value


def region_candidates(
    view: DocumentView, spec: FieldSpec, locator: RegionLocator
) -> list[Candidate]:
    """At most one candidate: the value read from the words whose centres lie in the box."""
    page = view.page(locator.page)
    if page is None:
        return []
    box, score = place_box(page, locator)
    rows = [tuple(w for w in row.words if _inside(w.box, box)) for row in page.rows]
    rows = [row for row in rows if row]
    words = [w for row in rows for w in row]
    if not words:
        return []
    if not spec.typed:
        raw = " ".join(join_words(row) for row in rows)
        return [spec.candidate(words, page.page.number, score, "region", raw)]
    reading = read_value(spec, words)
    if reading is None:
        return [spec.candidate(words, page.page.number, score * INVALID, "region")]
    return [spec.candidate(reading[0], page.page.number, score, "region")]


def place_box(page: PageView, locator: RegionLocator) -> tuple[Rect, float]:
    """Where the region lies on this page, and how sure that placement is."""
    box = _rect(locator.box)
    if locator.anchor is None or locator.anchor_box is None:
        return _padded(box), 1.0
    template = _rect(locator.anchor_box)
    hits = page.labels.find(locator.anchor)
    if not hits:
        return _padded(box), ANCHOR_MISSING
    found = min(
        (hit.box for hit in hits),
        key=lambda b: (b.cx - template.cx) ** 2 + (b.cy - template.cy) ** 2,
    )
    sx = _clamp(found.width / template.width, 0.5, 2.0)
    sy = _clamp(found.height / template.height, 0.5, 2.0)
    moved = Rect(
        found.x0 + (box.x0 - template.x0) * sx,
        found.y0 + (box.y0 - template.y0) * sy,
        found.x0 + (box.x1 - template.x0) * sx,
        found.y0 + (box.y1 - template.y0) * sy,
    )
    return _padded(moved), 1.0


def _rect(box: Box) -> Rect:
    return Rect(box.x0, box.y0, box.x1, box.y1)


def _padded(box: Rect) -> Rect:
    dx, dy = box.width * _PAD, box.height * _PAD
    return Rect(
        max(0.0, box.x0 - dx), max(0.0, box.y0 - dy), min(1.0, box.x1 + dx), min(1.0, box.y1 + dy)
    )


def _inside(word: Rect, box: Rect) -> bool:
    return box.x0 <= word.cx <= box.x1 and box.y0 <= word.cy <= box.y1


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))
