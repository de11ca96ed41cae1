"""PNG, JPEG and (multi-page) TIFF images: size checked from the header, then OCRed.

Pillow reads only the header on open, so the pixel count is checked before any pixel is
decoded. Pillow's own decompression-bomb guard fires at open for absurd sizes; it is caught and
reported as the same refusal. Frames of a TIFF are decoded one at a time.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from PIL import Image, ImageOps

from docflow.extraction.errors import RejectCode
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, ReadDocument
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.readers.ocr_page import Reject, ocr_page

_FORMATS = {DocumentKind.PNG: "PNG", DocumentKind.JPEG: "JPEG", DocumentKind.TIFF: "TIFF"}


def read_image(
    data: bytes, kind: DocumentKind, *, ocr: OcrEngine, limits: EngineLimits
) -> ReadDocument:
    """OCR every page of an image document; raises `Reject` for images that cannot be read."""
    pages = tuple(
        ocr_page(frame, number=number, size=frame.size, ocr=ocr, limits=limits)
        for number, frame in enumerate(_frames(data, kind, limits), start=1)
    )
    return ReadDocument(kind, pages)


def _frames(data: bytes, kind: DocumentKind, limits: EngineLimits) -> Iterator[Image.Image]:
    """Decoded, upright pages; PNG and JPEG give their first frame only."""
    with _open(data, kind, limits) as image:
        count = getattr(image, "n_frames", 1) if kind == DocumentKind.TIFF else 1
        if count > limits.max_pages:
            raise Reject(
                RejectCode.TOO_MANY_PAGES,
                f"the TIFF has {count} pages; at most {limits.max_pages} are accepted",
            )
        for index in range(count):
            if index:
                image.seek(index)
            _check_pixels(image, limits)
            try:
                frame = ImageOps.exif_transpose(image)
            except (OSError, ValueError, SyntaxError, EOFError) as exc:
                raise Reject(RejectCode.CORRUPT_FILE, _damaged(kind, index)) from exc
            yield frame


def _open(data: bytes, kind: DocumentKind, limits: EngineLimits) -> Image.Image:
    # Pillow warns (DecompressionBombWarning) above its own, higher threshold, but such images
    # are refused here before decoding; the warning filters are left alone since changing them
    # is not thread-safe.
    try:
        image = Image.open(io.BytesIO(data), formats=[_FORMATS[kind]])
    except Image.DecompressionBombError as exc:
        raise Reject(RejectCode.IMAGE_TOO_LARGE, _too_large(limits)) from exc
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise Reject(RejectCode.CORRUPT_FILE, _damaged(kind, 0)) from exc
    _check_pixels(image, limits)
    return image


def _check_pixels(image: Image.Image, limits: EngineLimits) -> None:
    width, height = image.size
    if width < 1 or height < 1:
        raise Reject(RejectCode.CORRUPT_FILE, "the image has no pixels")
    if width * height > limits.max_pixels:
        raise Reject(RejectCode.IMAGE_TOO_LARGE, _too_large(limits, width, height))


def _too_large(limits: EngineLimits, width: int = 0, height: int = 0) -> str:
    claimed = f" ({width} x {height} pixels)" if width else ""
    return f"the image is too large{claimed}; at most {limits.max_pixels} pixels are accepted"


def _damaged(kind: DocumentKind, index: int) -> str:
    where = f" (page {index + 1})" if kind == DocumentKind.TIFF else ""
    return f"the {kind.value.upper()} image is damaged and cannot be decoded{where}"
