"""Stable codes for documents the engine refuses; a stage returns `Rejected` instead of raising."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RejectCode(StrEnum):
    EMPTY_FILE = "empty_file"
    CORRUPT_FILE = "corrupt_file"
    UNSUPPORTED_TYPE = "unsupported_type"
    ENCRYPTED_PDF = "encrypted_pdf"
    TOO_MANY_PAGES = "too_many_pages"
    IMAGE_TOO_LARGE = "image_too_large"
    OCR_TIMEOUT = "ocr_timeout"
    INTERNAL_ERROR = "internal_error"


@dataclass(frozen=True, slots=True)
class Rejected:
    """A document the engine could not read, with a stable code and a human-readable reason."""

    code: RejectCode
    reason: str
