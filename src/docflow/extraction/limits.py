"""The limits the reading stage enforces; the composition root builds them from Settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """Bounds on what one document may cost to read.

    max_pages: a document with more pages is refused (too_many_pages).
    max_pixels: an image whose header claims more pixels is refused before it is decoded, and
        so is a PDF page to OCR whose rendering at `dpi` would have more, before it is rendered
        (image_too_large).
    ocr_seconds_per_page: OCR of one page that takes longer is abandoned (ocr_timeout).
    dpi: resolution at which PDF pages without a usable text layer are rendered for OCR.
    min_text_chars: a PDF page whose text layer has fewer non-blank characters is OCRed.
    detect_orientation: run orientation detection (Tesseract OSD) on each OCRed page and turn
        the page upright first; costs one extra pass of layout analysis per page.
    """

    max_pages: int = 200
    max_pixels: int = 60_000_000
    ocr_seconds_per_page: float = 60.0
    dpi: int = 300
    min_text_chars: int = 16
    detect_orientation: bool = False

    def __post_init__(self) -> None:
        if self.max_pages < 1 or self.max_pixels < 1 or self.min_text_chars < 0:
            raise ValueError("max_pages and max_pixels must be positive, min_text_chars >= 0")
        if self.ocr_seconds_per_page <= 0:
            raise ValueError("ocr_seconds_per_page must be positive")
        if not 36 <= self.dpi <= 1200:
            raise ValueError("dpi must be between 36 and 1200")
