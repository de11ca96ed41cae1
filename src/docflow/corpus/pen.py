"""A thin drawing helper over a reportlab canvas, in millimetres from the top left corner."""

from __future__ import annotations

import io

from reportlab.lib.units import mm
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen.canvas import Canvas

BOLD = {"Helvetica": "Helvetica-Bold", "Times-Roman": "Times-Bold", "Courier": "Courier-Bold"}


class Pen:
    """Draws text and rules; records every printed string so ground truth can be checked."""

    def __init__(self, width_mm: float, height_mm: float, font: str) -> None:
        self.buffer = io.BytesIO()
        self.width = width_mm
        self.height = height_mm
        self.font = font
        # invariant: no timestamps or random ids in the file, so a seed gives the same bytes
        self.canvas = Canvas(
            self.buffer, pagesize=(width_mm * mm, height_mm * mm), invariant=1, pageCompression=1
        )
        self.canvas.setTitle("document")
        self.canvas.setAuthor("docflow corpus")
        self.canvas.setCreator("docflow corpus")
        self.canvas.setProducer("docflow corpus")

    def text(
        self,
        x: float,
        y: float,
        value: str,
        *,
        size: float = 9,
        font: str | None = None,
        align: str = "left",
    ) -> None:
        """Draw `value` with its baseline `y` mm from the top, anchored at `x` by `align`."""
        c = self.canvas
        c.setFont(font or self.font, size)
        px, py = x * mm, (self.height - y) * mm
        if align == "right":
            c.drawRightString(px, py, value)
        elif align == "center":
            c.drawCentredString(px, py, value)
        else:
            c.drawString(px, py, value)

    @property
    def bold(self) -> str:
        return BOLD.get(self.font, self.font)

    def wrap(
        self, value: str, width: float, *, size: float = 9, font: str | None = None
    ) -> list[str]:
        return list(simpleSplit(value, font or self.font, size, width * mm))

    def rule(self, x0: float, y: float, x1: float, *, weight: float = 0.6) -> None:
        self.canvas.setLineWidth(weight)
        self.canvas.line(x0 * mm, (self.height - y) * mm, x1 * mm, (self.height - y) * mm)

    def box(self, x: float, y: float, w: float, h: float) -> None:
        self.canvas.setLineWidth(0.6)
        self.canvas.rect(x * mm, (self.height - y - h) * mm, w * mm, h * mm)

    def finish(self) -> bytes:
        self.canvas.showPage()
        self.canvas.save()
        return self.buffer.getvalue()
