"""A tenant workflow whose pattern backtracks catastrophically on Python's re, and a text PDF that
sets it off: `(a+)+$` over 29 a's and a "!" tries 2**29 ways of splitting the a's.

The pattern is both a pattern locator (searched over each line) and a regex field's `pattern`
(matched against the value right of the label "Code"), the two places a tenant's pattern runs.
"""

from __future__ import annotations

import io
from typing import Any

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

PATTERN = r"(a+)+$"
TEXT = "a" * 29 + "!"


def workflow_body(name: str = "catastrophic") -> dict[str, Any]:
    """The workflow definition, as JSON."""
    return {
        "name": name,
        "fields": [
            {"name": "reference", "locators": [{"kind": "pattern", "pattern": PATTERN}]},
            {
                "name": "code",
                "type": "regex",
                "pattern": PATTERN,
                "locators": [{"kind": "label", "labels": ["Code"]}],
            },
        ],
    }


def pdf() -> bytes:
    """A one-page text PDF with the text alone on a line and again after "Code:"."""
    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    page.setFont("Helvetica", 10)
    page.drawString(50, 700, TEXT)
    page.drawString(50, 600, f"Code: {TEXT}")
    page.showPage()
    page.save()
    return buffer.getvalue()
