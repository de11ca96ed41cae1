"""Words from a PDF page's text layer: characters grouped into words and lines.

pdfium gives characters in content-stream order with their boxes in PDF user space (origin
bottom left, y up). A word ends at whitespace, at a line break, or where the next character
is too far away or not on the same baseline; the word boxes are then turned into normalised
page coordinates (origin top left), taking the crop box and the page's /Rotate into account.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docflow.extraction.model import Rect, Word

Boxes = np.ndarray[Any, Any]

# A gap wider than this fraction of the character height separates two words even without a
# space character (PDFs often position words individually).
_WORD_GAP = 0.25
# A character whose centre moves by more than this fraction of the height is on another line.
_LINE_JUMP = 0.5
# A vertical gap larger than this many line heights starts a new block.
_BLOCK_GAP = 1.0
# Not visible although above U+0020: non-characters pdfium uses as markers, soft hyphen.
_INVISIBLE = np.array([0xAD, 0xFEFF, 0xFFFE, 0xFFFF], dtype=np.uint32)


@dataclass(frozen=True, slots=True)
class PageGeometry:
    """Maps PDF user-space boxes to normalised page coordinates as the page is displayed."""

    left: float
    bottom: float
    right: float
    top: float
    rotation: int  # clockwise, one of 0, 90, 180, 270

    @classmethod
    def of(cls, page: pdfium.PdfPage) -> PageGeometry:
        left, bottom, right, top = page.get_cropbox()
        if right - left <= 0 or top - bottom <= 0:
            left, bottom, right, top = page.get_mediabox()
        if right - left <= 0 or top - bottom <= 0:
            raise ValueError("page has no area")
        return cls(left, bottom, right, top, page.get_rotation() % 360)

    @property
    def size(self) -> tuple[float, float]:
        """Displayed width and height in points."""
        width, height = self.right - self.left, self.top - self.bottom
        return (height, width) if self.rotation in (90, 270) else (width, height)

    def normalise(self, x0: Boxes, y0: Boxes, x1: Boxes, y1: Boxes) -> Boxes:
        """User-space boxes (y up) as normalised (x0, y0, x1, y1) rows on the displayed page."""
        width, height = self.right - self.left, self.top - self.bottom
        u0, u1 = (x0 - self.left) / width, (x1 - self.left) / width
        v0, v1 = (self.top - y1) / height, (self.top - y0) / height
        if self.rotation == 90:
            u0, v0, u1, v1 = 1 - v1, u0, 1 - v0, u1
        elif self.rotation == 180:
            u0, v0, u1, v1 = 1 - u1, 1 - v1, 1 - u0, 1 - v0
        elif self.rotation == 270:
            u0, v0, u1, v1 = v0, 1 - u1, v1, 1 - u0
        return np.clip(np.column_stack([u0, v0, u1, v1]), 0.0, 1.0)


def text_layer_words(textpage: pdfium.PdfTextPage, geometry: PageGeometry) -> list[Word]:
    """The words of a text page in content-stream order, boxes normalised to the page."""
    raw = textpage.raw
    count = pdfium_c.FPDFText_CountChars(raw)
    if count <= 0:
        return []
    text = textpage.get_text_range(0, count)
    if len(text) != count:  # characters outside the BMP: read them one by one
        text = "".join(chr(pdfium_c.FPDFText_GetUnicode(raw, i)) for i in range(count))
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    boxes, visible = _char_boxes(raw, codes)
    if not visible.size:
        return []
    breaks = np.cumsum((codes == 10) | (codes == 13), dtype=np.int64)
    new_line, new_word = _boundaries(boxes[visible], visible, breaks)
    return _words(text, boxes[visible], visible, new_line, new_word, geometry)


def _char_boxes(raw: Any, codes: Boxes) -> tuple[Boxes, Boxes]:
    """Loose boxes (left, bottom, right, top) of every character, and the visible ones' indices.

    Loose boxes span the font's ascent and descent, so all characters of a line share a
    height whatever their glyph shape: steadier for finding lines than tight glyph boxes.
    """
    count = len(codes)
    rects = (pdfium_c.FS_RECTF * count)()
    base = ctypes.addressof(rects)
    found = list(
        map(
            _loose_char_box(),
            itertools.repeat(ctypes.cast(raw, ctypes.c_void_p).value, count),
            range(count),
            range(
                base,
                base + ctypes.sizeof(pdfium_c.FS_RECTF) * count,
                ctypes.sizeof(pdfium_c.FS_RECTF),
            ),
        )
    )
    visible = (np.asarray(found) != 0) & ~np.isin(codes, _INVISIBLE) & (codes > 32)
    visible &= ~((codes >= 0x7F) & (codes <= 0xA0)) & ~((codes >= 0x2000) & (codes <= 0x200F))
    # FS_RECTF is (left, top, right, bottom) as float32.
    ltrb = np.frombuffer(rects, dtype=np.float32).reshape(count, 4).astype(np.float64)
    return ltrb[:, [0, 3, 2, 1]], np.flatnonzero(visible)


@functools.cache
def _loose_char_box() -> Callable[[int | None, int, int], int]:
    """FPDFText_GetLooseCharBox taking plain addresses.

    A page has thousands of characters; with the binding's typed pointer arguments the
    argument conversion costs more than pdfium's own work, so addresses are passed as
    integers to the same function.
    """
    prototype = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
    address = ctypes.cast(pdfium_c.FPDFText_GetLooseCharBox, ctypes.c_void_p).value
    assert address is not None
    function: Callable[[int | None, int, int], int] = prototype(address)
    return function


def _boundaries(boxes: Boxes, visible: Boxes, breaks: Boxes) -> tuple[Boxes, Boxes]:
    """Where a new line and a new word start, for each visible character after the first."""
    prev, cur = boxes[:-1], boxes[1:]
    height = np.maximum(np.maximum(cur[:, 3] - cur[:, 1], prev[:, 3] - prev[:, 1]), 1e-6)
    centre_move = np.abs((cur[:, 1] + cur[:, 3]) - (prev[:, 1] + prev[:, 3])) / 2
    line_break = breaks[visible[1:]] > breaks[visible[:-1]]
    backwards = cur[:, 2] <= prev[:, 0]
    new_line = (centre_move > _LINE_JUMP * height) | backwards | line_break
    separated = visible[1:] - visible[:-1] > 1  # whitespace or invisible characters between
    gap = cur[:, 0] - prev[:, 2] > _WORD_GAP * height
    new_word = new_line | separated | gap
    first = np.ones(1, dtype=bool)
    return np.concatenate([first, new_line]), np.concatenate([first, new_word])


def _words(
    text: str,
    boxes: Boxes,
    visible: Boxes,
    new_line: Boxes,
    new_word: Boxes,
    geometry: PageGeometry,
) -> list[Word]:
    starts = np.flatnonzero(new_word)
    ends = np.append(starts[1:], len(visible)) - 1
    x0 = np.minimum.reduceat(boxes[:, 0], starts)
    y0 = np.minimum.reduceat(boxes[:, 1], starts)
    x1 = np.maximum.reduceat(boxes[:, 2], starts)
    y1 = np.maximum.reduceat(boxes[:, 3], starts)
    line_of_char = np.cumsum(new_line) - 1
    lines = line_of_char[starts]
    blocks = _blocks(boxes, new_line, line_of_char)[lines]
    first, last = visible[starts], visible[ends]
    normalised = geometry.normalise(x0, y0, x1, y1).tolist()
    return [
        Word(text[a : b + 1], Rect(*box), 1.0, line, block)
        for a, b, box, line, block in zip(
            first.tolist(), last.tolist(), normalised, lines.tolist(), blocks.tolist(), strict=True
        )
    ]


def _blocks(boxes: Boxes, new_line: Boxes, line_of_char: Boxes) -> Boxes:
    """Block id per line: a new block after a vertical gap or where text jumps back up."""
    starts = np.flatnonzero(new_line)
    bottom = np.minimum.reduceat(boxes[:, 1], starts)
    top = np.maximum.reduceat(boxes[:, 3], starts)
    height = np.maximum(top - bottom, 1e-6)
    gap = bottom[:-1] - top[1:]  # y grows upwards: positive when the next line is lower
    new_block = (gap > _BLOCK_GAP * height[1:]) | (top[1:] > bottom[:-1] + height[:-1])
    return np.concatenate([[0], np.cumsum(new_block)])
