"""The words a document's pages were read as, kept as bytes: what the console shows a reviewer
to pick from and what `GET /v1/documents/{id}/words` hands an integrator.

One compact JSON format, written by the document flow when the engine has read a file (the
document's `words.json` in storage) and by the console's page cache: per page its number, size,
text source, the engine that read it (`text_layer`, else the OCR tier: `tesseract`, `ppocr`)
and its words as `[text, x0, y0, x1, y1, confidence, line, block]`, boxes normalised (0-1,
origin top left) as the result's field boxes are.
"""

from __future__ import annotations

import json
from typing import Any

from docflow.extraction.model import DocumentKind, Page, ReadDocument, Rect, TextSource, Word

TEXT_LAYER = "text_layer"


def engine_of(page: Page, ocr_engine: str) -> str:
    """What read `page`: its text layer, else `ocr_engine`."""
    return TEXT_LAYER if page.source == TextSource.TEXT_LAYER else ocr_engine


def dumped(document: ReadDocument, *, ocr_engine: str) -> bytes:
    """`document` as stored, its OCRed pages marked as read by `ocr_engine`."""
    pages = [
        {
            "number": page.number,
            "width": page.width,
            "height": page.height,
            "source": page.source.value,
            "engine": engine_of(page, ocr_engine),
            "words": [
                [w.text, w.box.x0, w.box.y0, w.box.x1, w.box.y1, w.confidence, w.line, w.block]
                for w in page.words
            ],
        }
        for page in document.pages
    ]
    return json.dumps({"kind": document.kind.value, "pages": pages}, separators=(",", ":")).encode()


def loaded(data: bytes) -> ReadDocument:
    """The read document `dumped` stored."""
    stored = json.loads(data)
    return ReadDocument(
        DocumentKind(stored["kind"]),
        tuple(
            Page(
                page["number"],
                page["width"],
                page["height"],
                TextSource(page["source"]),
                tuple(
                    Word(text, Rect(x0, y0, x1, y1), confidence, line, block)
                    for text, x0, y0, x1, y1, confidence, line, block in page["words"]
                ),
            )
            for page in stored["pages"]
        ),
    )


def _box(x0: float, y0: float, x1: float, y1: float) -> list[float]:
    return [round(v, 5) for v in (x0, y0, x1, y1)]


def page_views(data: bytes, *, after: int, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """The stored pages numbered above `after`, at most `limit` of them, each as
    `{page, width, height, engine, words: [{text, box, confidence}]}`, and whether more
    follow."""
    stored = [p for p in json.loads(data)["pages"] if p["number"] > after]
    views = [
        {
            "page": page["number"],
            "width": page["width"],
            "height": page["height"],
            "engine": page.get("engine", TEXT_LAYER if page["source"] == TEXT_LAYER else "ocr"),
            "words": [
                {"text": text, "box": _box(x0, y0, x1, y1), "confidence": round(confidence, 4)}
                for text, x0, y0, x1, y1, confidence, _line, _block in page["words"]
            ],
        }
        for page in stored[:limit]
    ]
    return views, len(stored) > limit


def page_words(document: ReadDocument) -> list[list[dict[str, Any]]]:
    """Every page's words: `{"text", "box": [x0, y0, x1, y1]}` in normalised coordinates."""
    return [
        [{"text": w.text, "box": _box(w.box.x0, w.box.y0, w.box.x1, w.box.y1)} for w in page.words]
        for page in document.pages
    ]
