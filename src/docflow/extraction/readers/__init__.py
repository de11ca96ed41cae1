"""Reading: document bytes to pages of words, from a PDF text layer or from OCR.

`read_pages` is the reading stage of the pipeline (after `sniff.sniff_kind`); `read_document`
is both. They never raise for bad input: every document they cannot read comes back as
`Rejected` with a stable code and a reason that names the problem but quotes nothing from the
document.
"""

from __future__ import annotations

import time

import structlog
from PIL import Image

from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, ReadDocument
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.readers.image import read_image
from docflow.extraction.readers.ocr_page import Reject
from docflow.extraction.readers.pdf import read_pdf
from docflow.extraction.sniff import sniff_kind

__all__ = ["read_document", "read_pages"]

log = structlog.get_logger(__name__)


def read_document(
    data: bytes, *, ocr: OcrEngine, limits: EngineLimits = EngineLimits()
) -> ReadDocument | Rejected:
    """Read a PDF, PNG, JPEG or TIFF into pages of words, or say why it cannot be read.

    PDF pages with a usable text layer (at least `limits.min_text_chars` characters) take their
    words from it; other PDF pages and all images are OCRed with `ocr`, one page at a time.
    Codes: empty_file, unsupported_type, corrupt_file, encrypted_pdf, too_many_pages,
    image_too_large, ocr_timeout, internal_error (the OCR engine itself failed).
    """
    kind = sniff_kind(data)
    if isinstance(kind, Rejected):
        return kind
    return read_pages(data, kind, ocr=ocr, limits=limits)


def read_pages(
    data: bytes, kind: DocumentKind, *, ocr: OcrEngine, limits: EngineLimits = EngineLimits()
) -> ReadDocument | Rejected:
    """Read `data`, sniffed as `kind`, into pages of words (see `read_document`)."""
    started = time.perf_counter()
    try:
        if kind == DocumentKind.PDF:
            document = read_pdf(data, ocr=ocr, limits=limits)
        else:
            document = read_image(data, kind, ocr=ocr, limits=limits)
    except Reject as reject:
        log.info("extraction.read_rejected", kind=kind.value, code=reject.code.value)
        return Rejected(reject.code, reject.reason)
    except Image.DecompressionBombError:
        log.info("extraction.read_rejected", kind=kind.value, code="image_too_large")
        return Rejected(RejectCode.IMAGE_TOO_LARGE, "the image is too large to decode")
    except Exception as exc:  # any parser failure on hostile input is the document's fault
        log.warning("extraction.read_failed", kind=kind.value, error=type(exc).__name__)
        return Rejected(
            RejectCode.CORRUPT_FILE,
            f"the {kind.value.upper()} file is damaged and cannot be read ({type(exc).__name__})",
        )
    log.debug(
        "extraction.read",
        kind=kind.value,
        pages=len(document.pages),
        ms=round((time.perf_counter() - started) * 1000, 1),
    )
    return document
