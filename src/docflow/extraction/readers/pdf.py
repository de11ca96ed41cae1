"""PDFs through pypdfium2: the text layer where it is usable, OCR of a rendering where not.

Pages are read one at a time and every pdfium object and rendered bitmap is released before
the next page, so a long scanned PDF never holds more than one page image.

pdfium is not thread-safe: every call into it holds one process-wide lock, so `read_document`
may be called from several threads. OCR runs outside the lock, so scanned pages of different
documents are still recognised in parallel.
"""

from __future__ import annotations

import math
import threading

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import structlog
from PIL import Image

from docflow.extraction.errors import RejectCode
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, Page, ReadDocument, TextSource
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.readers.ocr_page import Reject, ocr_page
from docflow.extraction.readers.pdf_text import PageGeometry, text_layer_words

log = structlog.get_logger(__name__)

PDFIUM_LOCK = threading.RLock()


def read_pdf(data: bytes, *, ocr: OcrEngine, limits: EngineLimits) -> ReadDocument:
    """Read every page of a PDF; raises `Reject` for documents that cannot be read."""
    with PDFIUM_LOCK:
        document = _open(data)
    try:
        with PDFIUM_LOCK:
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
        with PDFIUM_LOCK:
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
    with PDFIUM_LOCK:
        text_page, rendering, size = _text_or_rendering(document, index, limits)
    if text_page is not None:
        return text_page
    assert rendering is not None
    return ocr_page(rendering, number=index + 1, size=size, ocr=ocr, limits=limits)


def _text_or_rendering(
    document: pdfium.PdfDocument, index: int, limits: EngineLimits
) -> tuple[Page | None, Image.Image | None, tuple[float, float]]:
    """The page from its text layer if usable, else a grayscale rendering to OCR."""
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
            page_read = Page(index + 1, width, height, TextSource.TEXT_LAYER, tuple(words))
            return page_read, None, geometry.size
        return None, _render(page, geometry.size, limits), geometry.size
    finally:
        page.close()


def _render(page: pdfium.PdfPage, size: tuple[float, float], limits: EngineLimits) -> Image.Image:
    scale = render_scale(size, limits)
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        # A copy: the bitmap's buffer belongs to pdfium and is freed with it.
        image = bitmap.to_pil().convert("L")
    finally:
        bitmap.close()
    image.info["dpi"] = (72 * scale, 72 * scale)
    return image


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
