"""Turn a text PDF page into a degraded scan: render, rotate, fade, noise, blur, JPEG."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pypdfium2 as pdfium
from PIL import Image, ImageFilter


@dataclass(frozen=True, slots=True)
class Degradation:
    """Upper bounds of the damage done to a page; each scan draws its own values below them."""

    rotation: float  # degrees, either way
    noise: float  # standard deviation of Gaussian grey-level noise
    blur: float  # Gaussian blur radius in pixels at 300 dpi
    jpeg_quality: int
    fade: float  # share of ink darkness lost (faded toner, thermal paper)


LEVELS = {
    "mild": Degradation(rotation=0.8, noise=5.0, blur=0.4, jpeg_quality=85, fade=0.05),
    "medium": Degradation(rotation=1.4, noise=11.0, blur=0.8, jpeg_quality=65, fade=0.15),
    "hard": Degradation(rotation=2.0, noise=18.0, blur=1.2, jpeg_quality=40, fade=0.3),
}


def render_page(pdf: bytes, *, dpi: int) -> Image.Image:
    """The first page of `pdf` as a greyscale image at `dpi`."""
    document = pdfium.PdfDocument(pdf)
    try:
        bitmap = document[0].render(scale=dpi / 72, grayscale=True)
        return bitmap.to_pil().convert("L")
    finally:
        document.close()


def degrade(
    image: Image.Image, level: Degradation, rng: np.random.Generator, *, dpi: int
) -> Image.Image:
    """Apply a random draw of `level` to `image`; the same generator state gives the same image."""
    angle = float(rng.uniform(-level.rotation, level.rotation))
    image = image.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    pixels = np.asarray(image, dtype=np.float32)
    fade = float(rng.uniform(0, level.fade))
    pixels = 255.0 - (255.0 - pixels) * (1.0 - fade)
    pixels += rng.normal(0.0, float(rng.uniform(0.5, 1.0)) * level.noise, size=pixels.shape)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode="L")
    radius = float(rng.uniform(0.5, 1.0)) * level.blur * dpi / 300
    return image.filter(ImageFilter.GaussianBlur(radius)) if radius > 0.05 else image


def scan(pdf: bytes, *, dpi: int, level: Degradation, rng: np.random.Generator) -> bytes:
    """A JPEG scan of the first page of `pdf`, with its resolution recorded in the file."""
    image = degrade(render_page(pdf, dpi=dpi), level, rng, dpi=dpi)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=level.jpeg_quality, dpi=(dpi, dpi), optimize=False)
    return out.getvalue()
