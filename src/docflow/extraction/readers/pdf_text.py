"""Words from a PDF page's text layer: characters grouped into words and lines.

pdfium gives characters in content-stream order with their boxes in PDF user space (origin
bottom left, y up). A word ends at whitespace, at a line break, or where the next character
is too far away or not on the same baseline; the word boxes are then turned into normalised
page coordinates (origin top left), taking the crop box and the page's /Rotate into account.
"""

from __future__ import annotations

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
        return cls(left, bottom, right, top, page.get_rotation() % 360)

    @property
    def size(self) -> tuple[float, float]:
        """Displayed width and height in points."""
        width, height = self.right - self.left, self.top - self.bottom
        return (height, width) if self.rotation in (90, 270) else (width, height)

    def normalise(self, x0: float, y0: float, x1: float, y1: float) -> Rect:
        """A user-space box (y up) as a normalised Rect on the displayed page."""
        width, height = self.right - self.left, self.top - self.bottom
        u0, u1 = (x0 - self.left) / width, (x1 - self.left) / width
        v0, v1 = (self.top - y1) / height, (self.top - y0) / height
        if self.rotation == 90:
            u0, v0, u1, v1 = 1 - v1, u0, 1 - v0, u1
        elif self.rotation == 180:
            u0, v0, u1, v1 = 1 - u1, 1 - v1, 1 - u0, 1 - v0
        elif self.rotation == 270:
            u0, v0, u1, v1 = v0, 1 - u1, v1, 1 - u0
        return Rect(_clamp(u0), _clamp(v0), _clamp(u1), _clamp(v1))


def _clamp(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def text_layer_words(textpage: pdfium.PdfTextPage, geometry: PageGeometry) -> list[Word]:
    """The words of a text page in content-stream order, boxes normalised to the page."""
    raw = textpage.raw
    count = pdfium_c.FPDFText_CountChars(raw)
    if count <= 0:
        return []
    text = textpage.get_text_range(0, count)
    if len(text) != count:  # characters outside the BMP: read them one by one
        text = "".join(chr(pdfium_c.FPDFText_GetUnicode(raw, i)) for i in range(count))
    boxes, visible = _char_boxes(raw, text)
    if not visible.size:
        return []
    breaks = np.cumsum([char in "\r\n" for char in text], dtype=np.int64)
    new_line, new_word = _boundaries(boxes[visible], visible, breaks)
    return _words(text, boxes[visible], visible, new_line, new_word, geometry)


def _char_boxes(raw: Any, text: str) -> tuple[Boxes, Boxes]:
    """Loose boxes (left, bottom, right, top) of every character, and the visible ones' indices.

    Loose boxes span the font's ascent and descent, so all characters of a line share a
    height whatever their glyph shape: steadier for finding lines than tight glyph boxes.
    """
    rects = (pdfium_c.FS_RECTF * len(text))()
    loose_box = pdfium_c.FPDFText_GetLooseCharBox
    visible: list[int] = []
    for index, char in enumerate(text):
        if not char.isspace() and char.isprintable() and loose_box(raw, index, rects[index]):
            visible.append(index)
    # FS_RECTF is (left, top, right, bottom) as float32.
    ltrb = np.frombuffer(rects, dtype=np.float32).reshape(len(text), 4).astype(np.float64)
    boxes = ltrb[:, [0, 3, 2, 1]]
    return boxes, np.asarray(visible, dtype=np.int64)


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
    return [
        Word(text[a : b + 1], geometry.normalise(*box), 1.0, line, block)
        for a, b, box, line, block in zip(
            first.tolist(),
            last.tolist(),
            zip(x0.tolist(), y0.tolist(), x1.tolist(), y1.tolist(), strict=True),
            lines.tolist(),
            blocks.tolist(),
            strict=True,
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
