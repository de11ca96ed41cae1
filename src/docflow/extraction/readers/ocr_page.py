"""One page image to a Page of OCR words: orientation, preparation, recognition, mapping back."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import structlog
from PIL import Image

from docflow.extraction.errors import RejectCode
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import Page, Rect, TextSource, Word
from docflow.extraction.ocr.base import OcrEngine, OcrError, OcrTimeout
from docflow.extraction.preprocess import PreprocessOptions, prepare

log = structlog.get_logger(__name__)


class Reject(Exception):
    """Raised inside a reader to stop with a stable code; `read_document` returns it."""

    def __init__(self, code: RejectCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@runtime_checkable
class OrientationDetector(Protocol):
    """An engine that can also tell how far a page is turned (0, 90, 180, 270 clockwise)."""

    def detect_orientation(self, image: Image.Image) -> int: ...


def ocr_page(
    image: Image.Image,
    *,
    number: int,
    size: tuple[float, float],
    ocr: OcrEngine,
    limits: EngineLimits,
    options: PreprocessOptions = PreprocessOptions(),
) -> Page:
    """OCR one page image into a Page of `size` (points for PDFs, pixels for images).

    Word boxes are normalised, so they hold for the page whatever resolution it was read at.
    With orientation detection on, a page found turned by 90 or 270 degrees swaps its size.
    """
    width, height = size
    if limits.detect_orientation and isinstance(ocr, OrientationDetector):
        turned = ocr.detect_orientation(image)
        if turned:
            # PIL turns counter-clockwise: undoing a clockwise turn of `turned` degrees.
            image = image.rotate(turned, expand=True)
            if turned in (90, 270):
                width, height = height, width
            log.info("ocr.page_turned", page=number, degrees=turned)
    prepared = prepare(image, options)
    try:
        words = ocr.recognize(prepared.image, timeout_s=limits.ocr_seconds_per_page)
    except OcrTimeout as exc:
        raise Reject(
            RejectCode.OCR_TIMEOUT,
            f"OCR of page {number} took longer than {limits.ocr_seconds_per_page:g} s",
        ) from exc
    except OcrError as exc:
        log.error("ocr.page_failed", page=number, engine=ocr.name, error=type(exc).__name__)
        raise Reject(RejectCode.INTERNAL_ERROR, f"OCR failed on page {number}") from exc
    words = [_mapped(word, prepared.to_original(word.box)) for word in words]
    return Page(number, float(width), float(height), TextSource.OCR, tuple(words))


def _mapped(word: Word, box: Rect) -> Word:
    return Word(word.text, box, word.confidence, word.line, word.block)
