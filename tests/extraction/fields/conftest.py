"""Hand-built pages for field tests: a page is drawn as text, one string per printed row.

Each character is 0.012 of the page wide and each row 0.025 high, so the spacing in the strings is
the spacing on the page: several spaces make a gap, aligned columns stay aligned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from docflow.extraction.fields.confidence import Signals, field_confidence
from docflow.extraction.model import DocumentKind, Page, ReadDocument, Rect, TextSource, Word

CHAR = 0.012
ROW = 0.025
TOP = 0.03

PageMaker = Callable[..., Page]
DocMaker = Callable[..., ReadDocument]


def draw_page(
    rows: Sequence[str],
    *,
    number: int = 1,
    source: TextSource = TextSource.TEXT_LAYER,
    confidence: float = 1.0,
    dx: float = 0.0,
    dy: float = 0.0,
    scale: float = 1.0,
) -> Page:
    """A page whose words sit where the strings put them, optionally shifted and scaled."""
    words = []
    for line, row in enumerate(rows):
        y0 = dy + (TOP + line * ROW) * scale
        for match in re.finditer(r"\S+", row):
            box = Rect(
                dx + match.start() * CHAR * scale,
                y0,
                dx + match.end() * CHAR * scale,
                y0 + 0.015 * scale,
            )
            words.append(Word(match.group(), box, confidence, line, 0))
    return Page(number, 612, 792, source, tuple(words))


@pytest.fixture
def page() -> PageMaker:
    return draw_page


@pytest.fixture
def document() -> DocMaker:
    def make(*pages: Page) -> ReadDocument:
        return ReadDocument(DocumentKind.PDF, tuple(pages))

    return make


def lone(score: float, kind: str, **signals: Any) -> float:
    """The field confidence of one unopposed candidate with locator score `score`, read from
    a text layer (how locator tests check a score through the pipeline's result)."""
    base = Signals(ocr=1.0, locator=score, kinds=1, consensus=1.0, valid=True, kind=kind)
    return round(field_confidence(replace(base, **signals)), 4)
