from __future__ import annotations

import random

import pytest
from PIL import Image

from docflow.extraction.model import DocumentKind
from docflow.extraction.sniff import sniff


@pytest.fixture
def samples(text_pdf, image_bytes) -> dict[DocumentKind, bytes]:
    image = Image.new("L", (8, 8), "white")
    return {
        DocumentKind.PDF: text_pdf([[(72, 72, "Hello")]]),
        DocumentKind.PNG: image_bytes([image], "PNG"),
        DocumentKind.JPEG: image_bytes([image], "JPEG"),
        DocumentKind.TIFF: image_bytes([image], "TIFF"),
    }


@pytest.mark.parametrize("kind", list(DocumentKind))
def test_each_kind_is_recognised_from_its_bytes(samples, kind) -> None:
    assert sniff(samples[kind]) == kind


def test_big_endian_tiff_is_recognised() -> None:
    assert sniff(b"MM\x00*\x00\x00\x00\x08") == DocumentKind.TIFF
    assert sniff(b"II*\x00\x08\x00\x00\x00") == DocumentKind.TIFF


def test_the_file_name_plays_no_part(samples, tmp_path) -> None:
    # A PNG saved under a misleading upper-case PDF name is still a PNG.
    path = tmp_path / "INVOICE.PDF"
    path.write_bytes(samples[DocumentKind.PNG])
    assert sniff(path.read_bytes()) == DocumentKind.PNG


def test_pdf_header_after_leading_junk() -> None:
    assert sniff(b"\r\n\x00junk%PDF-1.7\n") == DocumentKind.PDF


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00" * 64,
        b"PK\x03\x04 a zip archive",
        b"GIF89a",
        b"<html>%PD",
        b"\x89PNG",  # a truncated signature
    ],
)
def test_unknown_bytes_are_none(data: bytes) -> None:
    assert sniff(data) is None


def test_random_bytes_are_none() -> None:
    rng = random.Random(4)
    for _ in range(200):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        if data.startswith((b"\xff\xd8\xff", b"II*\x00", b"MM\x00*", b"\x89PNG", b"%PDF-")):
            continue
        assert sniff(data) is None
