"""Image preparation before OCR: grayscale, cropping to the print, upscaling of small text,
contrast, deskew.

Every step was measured on real receipts (bench/ocr_preprocess_study.py) and on generated
scans; the defaults are the combination that recognised the most there: upscaling of small
text, and background normalisation only where the paper is unevenly lit. Steps only
crop, scale and rotate the page slightly, so word boxes found on the prepared image map back
onto the original.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import cv2
import numpy as np
from PIL import Image

from docflow.extraction.model import Rect

Binarise = Literal["none", "otsu", "adaptive"]
Interpolation = Literal["linear", "cubic"]
_INTERPOLATION = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC}
WHOLE = Rect(0.0, 0.0, 1.0, 1.0)
Gray = np.ndarray[Any, Any]  # 2-D uint8


@dataclass(frozen=True, slots=True)
class PreprocessOptions:
    """Which preparation steps run. `none()` gives a plain grayscale pass."""

    upscale: bool = True
    # Median height of character blobs to reach, in pixels. On the receipts 26 read better
    # than 20 (too small) and 32 (slower, no better).
    target_text_height: int = 26
    # Text at least this tall is read as it is (Tesseract scales every line to its own
    # recognition height anyway; enlarging helps only where small text breaks apart).
    large_text_height: float = 20.8
    max_upscale: float = 3.0
    max_pixels: int = 40_000_000  # upscaling never goes past this
    # Bilinear enlargement costs less (in the resize and in Tesseract on the result) and found
    # more labelled values in the receipts' OCR text (0.756 against 0.732), but extracted one
    # company fewer on sroie-dev and lost two fields on generated receipts: bicubic stays.
    interpolation: Interpolation = "cubic"
    # Cut the blank margins before enlarging: Tesseract's thresholding and blob search cost
    # time in proportion to the pixels, margins included. Off: on the receipts it found fewer
    # labelled values (0.742 against 0.756) and saved little time on generated invoices. The
    # kept area is padded by `crop_padding` times the text height (at least 16 px).
    crop: bool = False
    crop_padding: float = 2.0
    # "uneven": only where the paper's brightness varies by more than `uneven_background`
    # grey levels (shadows, a photo's vignetting). Always normalising lowered the share of
    # labelled values found on the evenly scanned receipts: Tesseract's own thresholding
    # does better there.
    normalise_background: Literal["never", "uneven", "always"] = "uneven"
    uneven_background: int = 40
    # Global Otsu and adaptive thresholding both read fewer labelled values than leaving the
    # thresholding to Tesseract.
    binarise: Binarise = "none"
    # Off by default: Tesseract copes with the small skew of a scan by itself, and turning the
    # image first did not raise word recall on receipts or on generated scans turned by up to
    # 2 degrees (the interpolation softens the print). Useful beyond that.
    deskew: bool = False
    max_skew_degrees: float = 3.0

    @classmethod
    def none(cls) -> PreprocessOptions:
        return cls(
            upscale=False, crop=False, normalise_background="never", binarise="none", deskew=False
        )


@dataclass(frozen=True, slots=True)
class Prepared:
    """The image to OCR and how to map its normalised boxes back onto the original image."""

    image: Image.Image
    scale: float
    angle: float  # degrees the prepared image was turned counter-clockwise about its centre
    area: Rect = WHOLE  # the part of the original it shows (normalised)

    def to_original(self, rect: Rect) -> Rect:
        """A normalised box on the prepared image as a normalised box on the original."""
        area = self.area
        box = self._unturned(rect)
        return Rect(
            area.x0 + box.x0 * area.width,
            area.y0 + box.y0 * area.height,
            area.x0 + box.x1 * area.width,
            area.y0 + box.y1 * area.height,
        )

    def _unturned(self, rect: Rect) -> Rect:
        if self.angle == 0.0:
            return rect
        width, height = self.image.size
        cx, cy = width / 2, height / 2
        theta = math.radians(self.angle)
        cos, sin = math.cos(theta), math.sin(theta)
        xs: list[float] = []
        ys: list[float] = []
        corners = ((rect.x0, rect.y0), (rect.x1, rect.y0), (rect.x0, rect.y1), (rect.x1, rect.y1))
        for x, y in corners:
            dx, dy = x * width - cx, y * height - cy
            # The image was turned by +angle (counter-clockwise, y down); undo it.
            xs.append((cx + dx * cos - dy * sin) / width)
            ys.append((cy + dx * sin + dy * cos) / height)
        return Rect(
            min(max(min(xs), 0.0), 1.0),
            min(max(min(ys), 0.0), 1.0),
            min(max(max(xs), 0.0), 1.0),
            min(max(max(ys), 0.0), 1.0),
        )


def to_gray(image: Image.Image) -> Image.Image:
    """A grayscale copy, with transparent areas on white (not black) paper."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        paper.alpha_composite(rgba)
        return paper.convert("L")
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        array = np.asarray(image, dtype=np.float64)
        peak = float(array.max()) or 1.0
        return Image.fromarray((array * (255.0 / peak)).astype(np.uint8), "L")
    return image if image.mode == "L" else image.convert("L")


def prepare(image: Image.Image, options: PreprocessOptions = PreprocessOptions()) -> Prepared:
    """Run the enabled steps on `image` (any mode) and return a grayscale image to OCR."""
    gray: Gray = np.asarray(to_gray(image), dtype=np.uint8)
    if options.normalise_background != "never":
        paper = background(gray)
        spread = np.subtract(*np.percentile(paper, (95, 5)))
        if options.normalise_background == "always" or spread > options.uneven_background:
            gray = normalise_background(gray, paper)
    height = text_height(gray) if options.upscale or options.crop else None
    area = WHOLE
    if options.crop:
        gray, area = crop_to_print(
            gray, padding=max(16, round((height or 16) * options.crop_padding))
        )
    scale = 1.0
    if options.upscale:
        scale = _factor(height, gray.size, options)
        if scale > 1.0:
            interpolation = _INTERPOLATION[options.interpolation]
            gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=interpolation)
    if options.binarise == "otsu":
        gray = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1]
    elif options.binarise == "adaptive":
        gray = adaptive_binarise(gray)
    angle = skew_angle(gray, options.max_skew_degrees) if options.deskew else 0.0
    if angle:
        gray = rotate(gray, angle)
    prepared = Image.fromarray(gray, "L")
    dpi = image.info.get("dpi")
    if dpi:
        prepared.info["dpi"] = (dpi[0] * scale, dpi[1] * scale)
    return Prepared(prepared, scale, angle, area)


def crop_to_print(gray: Gray, *, padding: int) -> tuple[Gray, Rect]:
    """`gray` cut to the rows and columns that hold ink, `padding` pixels around them.

    Returns the cut image and the normalised part of `gray` it shows. Ink is found with Otsu's
    threshold on a copy reduced to about 1000 pixels; a row or column needs two ink pixels
    there, so single specks of scanner noise in a margin do not keep it. A page with no ink is
    returned whole.
    """
    height, width = gray.shape
    factor = max(1, max(height, width) // 1000)
    small = gray[::factor, ::factor]
    ink = cv2.threshold(small, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)[1] > 0
    rows = np.flatnonzero(np.count_nonzero(ink, axis=1) >= 2)
    columns = np.flatnonzero(np.count_nonzero(ink, axis=0) >= 2)
    if rows.size == 0 or columns.size == 0:
        return gray, WHOLE
    x0, x1 = (
        max(0, int(columns[0]) * factor - padding),
        min(width, (int(columns[-1]) + 1) * factor + padding),
    )
    y0, y1 = (
        max(0, int(rows[0]) * factor - padding),
        min(height, (int(rows[-1]) + 1) * factor + padding),
    )
    area = Rect(x0 / width, y0 / height, x1 / width, y1 / height)
    return np.ascontiguousarray(gray[y0:y1, x0:x1]), area


def text_height(gray: Gray) -> float | None:
    """Median height in pixels of the character-sized blobs on the page, if there are any.

    Large pages are measured at half size (text there is big enough to survive it).
    """
    if max(gray.shape) > 2400:
        half = cv2.resize(gray, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)
        measured = text_height(half)
        return None if measured is None else measured * 2
    ink = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)[1]
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    heights = stats[1:, cv2.CC_STAT_HEIGHT]
    widths = stats[1:, cv2.CC_STAT_WIDTH]
    plausible = heights[(heights >= 4) & (heights <= 200) & (widths <= heights * 3)]
    if count < 2 or plausible.size < 10:
        return None
    return float(np.median(plausible))


def upscale_factor(gray: Gray, options: PreprocessOptions) -> float:
    """How much to enlarge the page so its text reaches the target height (1.0: leave it)."""
    return _factor(text_height(gray), gray.size, options)


def _factor(height: float | None, pixels: int, options: PreprocessOptions) -> float:
    if height is None or height >= options.large_text_height:
        return 1.0
    factor = min(options.target_text_height / height, options.max_upscale)
    budget = math.sqrt(options.max_pixels / max(pixels, 1))
    return max(1.0, min(factor, budget))


def background(gray: Gray) -> Gray:
    """The paper without the print, on a copy reduced to about 800 pixels.

    Closing with a kernel wider than any stroke (on the reduced copy) erases the text.
    """
    height, width = gray.shape
    factor = max(1, max(height, width) // 800)
    size = (max(1, width // factor), max(1, height // factor))
    small = cv2.resize(gray, size, interpolation=cv2.INTER_AREA)
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (15, 15))
    paper: Gray = cv2.blur(cv2.morphologyEx(small, cv2.MORPH_CLOSE, kernel), (5, 5))
    return paper


def normalise_background(gray: Gray, paper: Gray | None = None) -> Gray:
    """Divide out uneven paper and lighting so faded print stands on a white background.

    `paper` is the reduced background from `background(gray)`. After the division the
    contrast is stretched so the darkest 1% of pixels become black and the lightest 0.5% white.
    """
    height, width = gray.shape
    paper = background(gray) if paper is None else paper
    full = cv2.resize(paper, (width, height), interpolation=cv2.INTER_LINEAR)
    flat = cv2.divide(gray, full, scale=255)
    cumulative = np.cumsum(np.bincount(flat.ravel(), minlength=256)) / flat.size
    low, high = int(np.searchsorted(cumulative, 0.01)), int(np.searchsorted(cumulative, 0.995))
    if high - low < 1:
        return flat
    ramp = (np.arange(256, dtype=np.float32) - low) * (255.0 / (high - low))
    return cv2.LUT(flat, np.clip(ramp, 0, 255).astype(np.uint8))


def adaptive_binarise(gray: Gray) -> Gray:
    block = max(31, (min(gray.shape) // 40) | 1)
    return cv2.adaptiveThreshold(
        gray, 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY, block, 15
    )


def skew_angle(gray: Gray, max_degrees: float) -> float:
    """The small rotation (degrees, counter-clockwise) that makes text lines horizontal.

    Projection profiles: on a reduced copy, the angle whose row sums vary most is the one where
    text lines and the gaps between them line up with the pixel rows. Searched in half-degree
    steps, then refined to a tenth around the best. 0.0 under 0.3 degrees.
    """
    small_scale = min(1.0, 1000 / max(gray.shape))
    small = cv2.resize(gray, None, fx=small_scale, fy=small_scale, interpolation=cv2.INTER_AREA)
    ink = cv2.threshold(small, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)[1]
    if not 0.001 < np.count_nonzero(ink) / ink.size < 0.5:  # blank, or no paper to speak of
        return 0.0

    def score(angle: float) -> float:
        rows = rotate(ink, angle, fill=0, nearest=True).sum(axis=1, dtype=np.float64)
        return float(np.var(rows))

    coarse = np.arange(-max_degrees, max_degrees + 1e-9, 0.5)
    best = float(max(coarse, key=score))
    fine = np.arange(best - 0.4, best + 0.41, 0.1)
    best = float(max(fine, key=score))
    return round(best, 2) if abs(best) >= 0.3 else 0.0


def rotate(gray: Gray, angle: float, fill: int = 255, nearest: bool = False) -> Gray:
    """`gray` turned by `angle` degrees counter-clockwise about its centre, same size."""
    height, width = gray.shape
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)
    flags = cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR
    return cv2.warpAffine(gray, matrix, (width, height), flags=flags, borderValue=(fill,))
