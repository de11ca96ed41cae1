"""PDFs through pypdfium2: the text layer where it is usable, OCR of a rendering where not.

Pages are read one at a time and every pdfium object and rendered bitmap is released before
the next page, so a long scanned PDF never holds more than one page image.
"""

from __future__ import annotations

import math

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import structlog

from docflow.extraction.errors import RejectCode
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, Page, ReadDocument, TextSource
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.readers.ocr_page import Reject, ocr_page
from docflow.extraction.readers.pdf_text import PageGeometry, text_layer_words

log = structlog.get_logger(__name__)


def read_pdf(data: bytes, *, ocr: OcrEngine, limits: EngineLimits) -> ReadDocument:
    """Read every page of a PDF; raises `Reject` for documents that cannot be read."""
    document = _open(data)
    try:
        count = len(document)
        if count > limits.max_pages:
            raise Reject(
                RejectCode.TOO_MANY_PAGES,
                f"the PDF has {count} pages; at most {limits.max_pages} are accepted",
            )
        if count == 0:
            raise Reject(RejectCode.CORRUPT_FILE, "the PDF has no pages")
        pages = tuple(_read_page(document, index, ocr, limits) for index in range(count))
    finally:
        document.close()
    return ReadDocument(DocumentKind.PDF, pages)


def _open(data: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise Reject(RejectCode.ENCRYPTED_PDF, "the PDF is protected by a password") from exc
        raise Reject(RejectCode.CORRUPT_FILE, "the PDF is damaged and cannot be opened") from exc


def _read_page(
    document: pdfium.PdfDocument, index: int, ocr: OcrEngine, limits: EngineLimits
) -> Page:
    page = document[index]
    try:
        geometry = PageGeometry.of(page)
        textpage = page.get_textpage()
        try:
            words = text_layer_words(textpage, geometry)
        finally:
            textpage.close()
        width, height = geometry.size
        if sum(len(word.text) for word in words) >= limits.min_text_chars:
            return Page(index + 1, width, height, TextSource.TEXT_LAYER, tuple(words))
        return _ocr_rendered(page, index + 1, (width, height), ocr, limits)
    finally:
        page.close()


def _ocr_rendered(
    page: pdfium.PdfPage,
    number: int,
    size: tuple[float, float],
    ocr: OcrEngine,
    limits: EngineLimits,
) -> Page:
    scale = render_scale(size, limits)
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        image = bitmap.to_pil()
        image.info["dpi"] = (72 * scale, 72 * scale)
        return ocr_page(image, number=number, size=size, ocr=ocr, limits=limits)
    finally:
        bitmap.close()


def render_scale(size: tuple[float, float], limits: EngineLimits) -> float:
    """Points-to-pixels factor for rendering at limits.dpi, lowered to stay within max_pixels.

    A huge page (a poster, a drawing) is read at a lower resolution rather than refused.
    """
    scale = limits.dpi / 72
    pixels = size[0] * size[1] * scale * scale
    if pixels > limits.max_pixels:
        scale = math.sqrt(limits.max_pixels / (size[0] * size[1]))
        log.info("pdf.render_scale_lowered", dpi=round(scale * 72))
    return scale
