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
from PIL import Image

from docflow.extraction.errors import RejectCode
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, Page, ReadDocument, TextSource
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.readers.ocr_page import Reject, ocr_page
from docflow.extraction.readers.pdf_text import PageGeometry, text_layer_words

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
        return None, _render(page, index + 1, geometry.size, limits), geometry.size
    finally:
        page.close()


def _render(
    page: pdfium.PdfPage, number: int, size: tuple[float, float], limits: EngineLimits
) -> Image.Image:
    scale = limits.dpi / 72
    _check_pixels(number, size, limits)
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        # A copy: the bitmap's buffer belongs to pdfium and is freed with it.
        image = bitmap.to_pil().convert("L")
    finally:
        bitmap.close()
    image.info["dpi"] = (limits.dpi, limits.dpi)
    return image


def _check_pixels(number: int, size: tuple[float, float], limits: EngineLimits) -> None:
    """Reject a page whose rendering at limits.dpi would exceed max_pixels, before rendering.

    A lower resolution would make the text too small to recognise (a poster-sized page fits
    60 million pixels only at a few dozen dpi), so the page is refused as documented instead.
    """
    width, height = (math.ceil(side * limits.dpi / 72) for side in size)
    if width * height > limits.max_pixels:
        raise Reject(
            RejectCode.IMAGE_TOO_LARGE,
            f"page {number} is too large to read: at {limits.dpi} dpi it would be "
            f"{width} x {height} pixels; at most {limits.max_pixels} pixels are accepted",
        )
