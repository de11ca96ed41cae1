"""The engine's typed output: a value, a confidence and provenance for every field."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from docflow.extraction.model import Rect

# The most text a result keeps of a document (a long document's later pages go unindexed).
MAX_TEXT = 50_000


class DocumentStatus(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    FAILED = "FAILED"


class Reading(StrEnum):
    """What produced a field's text: a PDF text layer, Tesseract, or PP-OCR."""

    TEXT_LAYER = "text_layer"
    TESSERACT = "tesseract"
    PPOCR = "ppocr"


@dataclass(frozen=True, slots=True)
class FieldResult:
    name: str
    value: str | None  # normalised: ISO dates, plain decimal strings, stripped text
    raw: str | None  # the text as read
    confidence: float  # 0-1
    page: int | None = None
    box: Rect | None = None
    locator: str | None = None  # "region", "label", "pattern", or "label+pattern" when they agree
    errors: tuple[str, ...] = ()
    reading: str | None = None  # a `Reading`: what read the words the value came from
    # Under `auto` with a second reading: whether both readings found this value (None: only
    # one reading found one, or there was a single reading).
    agreement: bool | None = None


@dataclass(frozen=True, slots=True)
class LineItemsResult:
    name: str
    rows: tuple[dict[str, str | None], ...]
    confidence: float
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    status: DocumentStatus
    confidence: float
    fields: dict[str, FieldResult]
    line_items: dict[str, LineItemsResult] = field(default_factory=dict)
    page_count: int = 0
    text_source: str = ""  # "text_layer", "ocr" or "mixed"
    reasons: tuple[str, ...] = ()  # why the status is not SUCCEEDED, naming the fields
    timings_ms: dict[str, float] = field(default_factory=dict)
    # Pages read per `Reading` ("text_layer", "tesseract", "ppocr"); a page re-read under
    # `auto` counts for both engines (each OCR read is a cost).
    pages_read: dict[str, int] = field(default_factory=dict)
    # The document's words as read, line by line and page by page, cut at `MAX_TEXT`
    # characters: what full-text search indexes besides the fields.
    text: str = ""

    def values(self) -> dict[str, str | None]:
        return {name: f.value for name, f in self.fields.items()}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
