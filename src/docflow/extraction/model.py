"""What a read document looks like, whatever it came from: pages of words with boxes.

Every reader (PDF text layer, OCR of a scan or an image) produces these, so the field
extraction stages never care where the words came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class DocumentKind(StrEnum):
    PDF = "pdf"
    PNG = "png"
    JPEG = "jpeg"
    TIFF = "tiff"


class TextSource(StrEnum):
    TEXT_LAYER = "text_layer"
    OCR = "ocr"


@dataclass(frozen=True, slots=True)
class Rect:
    """Normalised page coordinates (0-1), origin top left."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    def union(self, other: Rect) -> Rect:
        return Rect(
            min(self.x0, other.x0),
            min(self.y0, other.y0),
            max(self.x1, other.x1),
            max(self.y1, other.y1),
        )


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    box: Rect
    confidence: float  # 0-1; text-layer words are 1.0
    line: int  # line id, unique within the page
    block: int  # block id, unique within the page


@dataclass(frozen=True, slots=True)
class Page:
    number: int  # 1-based
    width: float  # in points for PDFs, pixels for images
    height: float
    source: TextSource
    words: tuple[Word, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class ReadDocument:
    kind: DocumentKind
    pages: tuple[Page, ...]


def plain_text(document: ReadDocument, limit: int) -> str:
    """The document's words, a line of text per line of words and a blank line between pages,
    at most `limit` characters."""
    pages = []
    for page in document.pages:
        lines: dict[tuple[int, int], list[str]] = {}
        for word in page.words:
            lines.setdefault((word.block, word.line), []).append(word.text)
        pages.append("\n".join(" ".join(words) for words in lines.values()))
    return "\n\n".join(pages)[:limit]
