"""Shared fixtures for extraction tests: documents generated in code, deterministically.

Each fixture returns a factory, so a test states the text and positions it needs.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import pytest
from PIL import Image, ImageDraw, ImageFont
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

FONT = "DejaVuSans.ttf"

# (x, y, text): x and y in points from the top-left corner of the page.
Placed = tuple[float, float, str]
TextPdf = Callable[..., bytes]
PageImage = Callable[..., Image.Image]
ImageBytes = Callable[..., bytes]


@pytest.fixture
def text_pdf() -> TextPdf:
    """Factory: a PDF with a text layer, one list of placed strings per page (Helvetica)."""

    def make(
        pages: Sequence[Sequence[Placed]],
        *,
        size: tuple[float, float] = A4,
        font_size: float = 12,
    ) -> bytes:
        buffer = io.BytesIO()
        pdf = canvas.Canvas(buffer, pagesize=size, invariant=1)
        for placed in pages:
            pdf.setFont("Helvetica", font_size)
            for x, y, text in placed:
                pdf.drawString(x, size[1] - y, text)
            pdf.showPage()
        pdf.save()
        return buffer.getvalue()

    return make


@pytest.fixture
def page_image() -> PageImage:
    """Factory: a white grayscale page with black text lines (DejaVu Sans)."""

    def make(
        lines: Sequence[Placed],
        *,
        size: tuple[int, int] = (1240, 1754),
        font_px: int = 40,
        mode: str = "L",
    ) -> Image.Image:
        image = Image.new(mode, size, "white")
        draw = ImageDraw.Draw(image)
        font = ImageFont.truetype(FONT, font_px)
        for x, y, text in lines:
            draw.text((x, y), text, fill="black", font=font)
        return image

    return make


@pytest.fixture
def image_bytes() -> ImageBytes:
    """Factory: encode images (several pages for TIFF or PDF) with Pillow."""

    def encode(images: Sequence[Image.Image], fmt: str, **options: object) -> bytes:
        buffer = io.BytesIO()
        first, *rest = images
        if rest:
            options = {"save_all": True, "append_images": rest, **options}
        first.save(buffer, format=fmt, **options)
        return buffer.getvalue()

    return encode
