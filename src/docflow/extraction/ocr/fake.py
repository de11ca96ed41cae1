"""A deterministic OCR engine for fast tests of the stages built on OCR output."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from docflow.extraction.model import Rect, Word
from docflow.extraction.ocr.base import OcrTimeout


class FakeOcrEngine:
    """Returns the same words for every page and counts the pages it was asked to read.

    For tests only: it does not look at the image. With `timeout=True` every call raises
    `OcrTimeout`, as a real engine does on a page that takes too long.
    """

    name = "fake"

    def __init__(self, words: Sequence[Word] = (), *, timeout: bool = False) -> None:
        self.words = tuple(words)
        self.timeout = timeout
        self.calls = 0
        self.sizes: list[tuple[int, int]] = []

    @classmethod
    def from_lines(cls, lines: Sequence[str], *, confidence: float = 0.9) -> FakeOcrEngine:
        """An engine that 'reads' these lines of text laid out top to bottom on the page.

        Each line is one block; words get evenly spaced boxes, lines 4% of the page apart.
        """
        words: list[Word] = []
        for line_no, line in enumerate(lines):
            y0 = 0.05 + line_no * 0.04
            x = 0.05
            for token in line.split():
                width = 0.012 * len(token)
                box = Rect(x, y0, min(x + width, 1.0), y0 + 0.025)
                words.append(Word(token, box, confidence, line_no, line_no))
                x = min(x + width + 0.012, 0.99)
        return cls(words)

    def recognize(self, image: Image.Image, *, timeout_s: float) -> list[Word]:
        self.calls += 1
        self.sizes.append(image.size)
        if self.timeout:
            raise OcrTimeout(timeout_s)
        return list(self.words)
