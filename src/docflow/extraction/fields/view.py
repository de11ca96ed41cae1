"""A read document prepared once for all locators: rows and a label index per page."""

from __future__ import annotations

from dataclasses import dataclass

from docflow.extraction.fields.labels import LabelIndex
from docflow.extraction.fields.layout import Row, build_rows
from docflow.extraction.model import Page, ReadDocument, TextSource


@dataclass(frozen=True, slots=True)
class PageView:
    page: Page
    rows: tuple[Row, ...]
    labels: LabelIndex


@dataclass(frozen=True, slots=True)
class DocumentView:
    pages: tuple[PageView, ...]

    def page(self, number: int) -> PageView | None:
        for view in self.pages:
            if view.page.number == number:
                return view
        return None


def view_document(document: ReadDocument) -> DocumentView:
    """Build rows and label indexes; approximate label matching only on OCR pages, where the
    text may be wrong, so text-layer pages stay fast and exact."""
    views = []
    for page in document.pages:
        rows = build_rows(page)
        fuzzy = page.source == TextSource.OCR
        views.append(PageView(page, rows, LabelIndex(rows, fuzzy=fuzzy)))
    return DocumentView(tuple(views))
