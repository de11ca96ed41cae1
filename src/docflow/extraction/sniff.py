"""Recognise a document's type from its first bytes, never from its name or declared type."""

from __future__ import annotations

from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.model import DocumentKind

_MAGIC: tuple[tuple[bytes, DocumentKind], ...] = (
    (b"%PDF-", DocumentKind.PDF),
    (b"\x89PNG\r\n\x1a\n", DocumentKind.PNG),
    (b"\xff\xd8\xff", DocumentKind.JPEG),
    (b"II*\x00", DocumentKind.TIFF),
    (b"MM\x00*", DocumentKind.TIFF),
)

# Real-world PDFs sometimes carry a few junk bytes before the header; PDF readers accept the
# header anywhere in the first kilobyte, and pdfium does too.
_PDF_HEADER_WINDOW = 1024


def sniff(data: bytes) -> DocumentKind | None:
    """Return the kind of document `data` holds by its magic number, or None if unknown.

    Only PDF, PNG, JPEG and TIFF (little- and big-endian) are recognised. Empty input is None.
    """
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if b"%PDF-" in data[:_PDF_HEADER_WINDOW]:
        return DocumentKind.PDF
    return None


def sniff_kind(data: bytes) -> DocumentKind | Rejected:
    """The sniffing stage of the pipeline: the document's kind, or `Rejected` when it is empty
    (empty_file) or of no kind the engine reads (unsupported_type)."""
    if not data:
        return Rejected(RejectCode.EMPTY_FILE, "the file is empty")
    kind = sniff(data)
    if kind is None:
        return Rejected(
            RejectCode.UNSUPPORTED_TYPE, "the file is not a PDF, PNG, JPEG or TIFF document"
        )
    return kind
