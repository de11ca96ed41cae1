"""OCR behind a small protocol: Tesseract in process (default), PP-OCR on ONNX Runtime (the
second tier), the Tesseract CLI, a fake.

Importing this package loads neither engine; `default_engine()` or constructing a Tesseract
engine loads Tesseract, PP-OCR loads on its first page.
"""

from __future__ import annotations

from docflow.extraction.ocr.base import PSM_SINGLE_BLOCK, OcrEngine, OcrError, OcrTimeout
from docflow.extraction.ocr.cli_engine import TesseractCliEngine
from docflow.extraction.ocr.fake import FakeOcrEngine
from docflow.extraction.ocr.ppocr_engine import DEFAULT_DET_SIDE, PpOcrEngine
from docflow.extraction.ocr.tesserocr_engine import DEFAULT_TESSDATA, TesserocrEngine

__all__ = [
    "DEFAULT_TESSDATA",
    "PRODUCTION_VARIABLES",
    "PSM_SINGLE_BLOCK",
    "FakeOcrEngine",
    "OcrEngine",
    "OcrError",
    "OcrTimeout",
    "PpOcrEngine",
    "TesseractCliEngine",
    "TesserocrEngine",
    "default_engine",
    "ppocr_engine",
]


# Tesseract re-reads every word it is unsure of as white on black: recognition time spent on
# documents printed dark on light, where it finds nothing (bench/accuracy.py: the same accuracy
# on every corpus without it).
PRODUCTION_VARIABLES = {"tessedit_do_invert": "0"}


def default_engine(
    *,
    datapath: str = DEFAULT_TESSDATA,
    lang: str = "eng",
    psm: int = PSM_SINGLE_BLOCK,
    max_engines: int | None = None,
) -> TesserocrEngine:
    """The production engine: Tesseract in process, kept loaded (one per busy thread, at most
    `max_engines` busy at once; other threads wait for one), with `PRODUCTION_VARIABLES`."""
    return TesserocrEngine(
        datapath=datapath,
        lang=lang,
        psm=psm,
        variables=PRODUCTION_VARIABLES,
        max_engines=max_engines,
    )


def ppocr_engine(
    *, det_side: int = DEFAULT_DET_SIDE, threads: int = 1, max_engines: int | None = None
) -> PpOcrEngine:
    """The production second tier: PP-OCR on ONNX Runtime, one model set shared by the
    process's threads (loaded on the first page), at most `max_engines` pages at once."""
    return PpOcrEngine(det_side=det_side, threads=threads, max_engines=max_engines)
