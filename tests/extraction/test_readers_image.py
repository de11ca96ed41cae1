from __future__ import annotations

import struct
import zlib

import pytest
from PIL import Image

from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, ReadDocument, Rect, TextSource, Word
from docflow.extraction.ocr import FakeOcrEngine
from docflow.extraction.readers import read_document

WORD = Word("total", Rect(0.5, 0.5, 0.6, 0.55), 0.9, 0, 0)


def read(data: bytes, ocr: FakeOcrEngine, **limits: object) -> ReadDocument:
    result = read_document(data, ocr=ocr, limits=EngineLimits(**limits))
    assert isinstance(result, ReadDocument), result
    return result


def reject_code(data: bytes, **limits: object) -> RejectCode:
    result = read_document(data, ocr=FakeOcrEngine(), limits=EngineLimits(**limits))
    assert isinstance(result, Rejected), result
    assert result.reason and "\n" not in result.reason
    return result.code


def png_chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def png_header(width: int, height: int) -> bytes:
    """A small grayscale PNG whose header claims a size its few pixel bytes do not fill."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * 1000)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", pixels)
        + png_chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(("fmt", "kind"), [("PNG", DocumentKind.PNG), ("JPEG", DocumentKind.JPEG)])
def test_images_are_ocred_as_one_page(image_bytes, fmt, kind) -> None:
    ocr = FakeOcrEngine([WORD])
    document = read(image_bytes([Image.new("RGB", (400, 300), "white")], fmt), ocr)
    assert document.kind == kind
    (page,) = document.pages
    assert (page.number, page.width, page.height) == (1, 400, 300)
    assert page.source == TextSource.OCR and page.words == (WORD,)
    assert ocr.calls == 1


def test_jpeg_exif_orientation_is_applied(image_bytes) -> None:
    # Stored landscape with orientation 6 (shown turned 90 degrees clockwise): portrait.
    image = Image.new("L", (400, 300), "white")
    image.paste(0, (0, 0, 40, 40))  # a mark in the stored top-left corner
    exif = Image.Exif()
    exif[0x0112] = 6
    ocr = FakeOcrEngine()
    page = read(image_bytes([image], "JPEG", exif=exif), ocr).pages[0]
    assert (page.width, page.height) == (300, 400)
    assert ocr.sizes == [(300, 400)]


def test_multipage_tiff_gives_one_page_per_frame(image_bytes) -> None:
    frames = [Image.new("L", (300 + 10 * n, 200), "white") for n in range(3)]
    ocr = FakeOcrEngine([WORD])
    document = read(image_bytes(frames, "TIFF", compression="tiff_deflate"), ocr)
    assert document.kind == DocumentKind.TIFF
    assert [(p.number, p.width) for p in document.pages] == [(1, 300), (2, 310), (3, 320)]
    assert ocr.calls == 3


def test_tiff_with_too_many_pages(image_bytes) -> None:
    frames = [Image.new("L", (50, 50), "white") for _ in range(3)]
    assert reject_code(image_bytes(frames, "TIFF"), max_pages=2) == RejectCode.TOO_MANY_PAGES


def test_transparent_png_is_read_on_white(image_bytes, page_image) -> None:
    image = Image.new("RGBA", (200, 100), (0, 0, 0, 0))
    ocr = FakeOcrEngine()
    read(image_bytes([image], "PNG"), ocr)
    assert ocr.calls == 1


def test_absurd_png_header_is_refused_before_decoding() -> None:
    assert reject_code(png_header(50_000, 50_000)) == RejectCode.IMAGE_TOO_LARGE


def test_image_over_the_pixel_limit_is_refused() -> None:
    # Below Pillow's own guard, above the configured limit.
    assert reject_code(png_header(3000, 3000), max_pixels=8_000_000) == RejectCode.IMAGE_TOO_LARGE


def test_image_header_without_pixels_is_corrupt() -> None:
    assert reject_code(png_header(300, 300)) == RejectCode.CORRUPT_FILE


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF"])
def test_truncated_images_are_corrupt(image_bytes, page_image, fmt) -> None:
    data = image_bytes([page_image([(40, 40, "Truncated")], size=(600, 400))], fmt)
    assert reject_code(data[: len(data) // 2]) == RejectCode.CORRUPT_FILE


@pytest.mark.parametrize(
    "data", [b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, b"\xff\xd8\xff" + b"\x17" * 300, b"II*\x00"]
)
def test_magic_followed_by_garbage_is_corrupt(data: bytes) -> None:
    assert reject_code(data) == RejectCode.CORRUPT_FILE


def test_empty_and_unknown_files() -> None:
    assert reject_code(b"") == RejectCode.EMPTY_FILE
    assert reject_code(b"GIF89a\x01\x00") == RejectCode.UNSUPPORTED_TYPE


def test_ocr_timeout_on_an_image(image_bytes) -> None:
    data = image_bytes([Image.new("L", (100, 100), "white")], "PNG")
    result = read_document(data, ocr=FakeOcrEngine(timeout=True))
    assert isinstance(result, Rejected) and result.code == RejectCode.OCR_TIMEOUT
