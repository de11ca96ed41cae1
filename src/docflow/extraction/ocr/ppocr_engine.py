"""PP-OCR (PP-OCRv4 detection and recognition) on ONNX Runtime through `rapidocr-onnxruntime`.

The models ship inside the wheel, so nothing is downloaded at run time. One model set is loaded
per engine object (the process keeps one) and shared by every thread: ONNX Runtime sessions may
run from several threads at once and release the interpreter lock while they compute, so other
threads keep running during recognition. A semaphore bounds how many pages are recognised at
once (`max_engines`), like the Tesseract pool, so memory stays that of one model set plus the
working buffers of the pages in flight.

PP-OCR finds text lines, each with a four-point box, its text and one score. A line is split
into words at its spaces, and each word gets the part of the line's box proportional to its
character offsets (the line's width shared evenly among its characters): receipts and invoices
print in fixed or near-fixed pitch, and the boxes only need to say which column and row a word
sits in. Every word of a line carries the line's score as its confidence.
"""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
import structlog
from PIL import Image

from docflow.extraction.model import Word
from docflow.extraction.ocr.base import OcrError, OcrTimeout, normalised_rect

log = structlog.get_logger(__name__)

# The longest side of the page as the text detector sees it, in pixels (larger pages are scaled
# down for detection only). The package's default instead scales every page up to a shortest
# side of 736, which on a generated A4 line of print merged words: their spaces were lost.
DEFAULT_DET_SIDE = 1280
# The longest side of the page the recogniser crops its lines from (the package's default).
RECOGNITION_SIDE = 2000


class PpOcrEngine:
    """PP-OCR through ONNX Runtime: one shared model set, at most `max_engines` pages at once,
    each using `threads` ONNX Runtime threads; see `OcrEngine` for `recognize`.

    ONNX Runtime cannot abandon a page part way, so a page that took longer than `timeout_s`
    raises `OcrTimeout` once it is done (its words are dropped).
    """

    name = "ppocr"

    def __init__(
        self,
        *,
        det_side: int = DEFAULT_DET_SIDE,
        threads: int = 1,
        max_engines: int | None = None,
        rec_batch: int = 6,
    ) -> None:
        self.det_side = det_side
        self.threads = threads
        self.rec_batch = rec_batch
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_engines) if max_engines else None

    def load(self) -> Any:
        """The model set, loaded on first use (a process that never re-reads never loads it)."""
        with self._load_lock:
            if self._model is None:
                try:
                    from rapidocr_onnxruntime import RapidOCR
                except ImportError as exc:  # a broken install
                    raise OcrError("rapidocr-onnxruntime is not installed") from exc
                # Pages arrive upright (as scanned, or after orientation detection): the
                # 180-degree line classifier would only cost time.
                self._model = RapidOCR(
                    use_cls=False,
                    print_verbose=False,
                    intra_op_num_threads=self.threads,
                    inter_op_num_threads=1,
                    det_limit_side_len=self.det_side,
                    det_limit_type="max",
                    max_side_len=max(RECOGNITION_SIDE, self.det_side),
                    rec_batch_num=self.rec_batch,
                )
                log.info("ocr.engine_started", engine=self.name, det_side=self.det_side)
            return self._model

    def recognize(self, image: Image.Image, *, timeout_s: float) -> list[Word]:
        """Recognise one page; see `OcrEngine`."""
        model = self.load()
        bgr = np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])
        started = time.monotonic()
        if self._slots is not None:
            self._slots.acquire()
        try:
            # Keyword arguments other than the three flags would rewrite the shared detector's
            # settings on every call (not thread-safe): none are passed.
            found, _elapsed = model(bgr, use_det=True, use_cls=False, use_rec=True)
        except Exception as exc:
            raise OcrError("PP-OCR failed to recognise the page") from exc
        finally:
            if self._slots is not None:
                self._slots.release()
        if time.monotonic() - started > timeout_s:
            raise OcrTimeout(timeout_s)
        return line_words(found or (), image.width, image.height)

    def close(self) -> None:
        """Nothing to release beyond the model set, which goes with the object."""


def line_words(lines: Sequence[Any], width: int, height: int) -> list[Word]:
    """PP-OCR's lines (`[points, text, score]`, points clockwise from top left) as words,
    each line split at its spaces with boxes proportional to character offsets; one block.

    The text is NFKC-normalised: the recogniser's dictionary is Chinese and English, so it
    often reads a bracket, a colon or a digit as its full-width form (`（`, `：`, `１`), which no
    label, pattern or value parser expects; NFKC maps those to their ASCII forms."""
    words: list[Word] = []
    ordered = sorted(lines, key=lambda line: (_top(line[0]), _left(line[0])))
    for number, (points, text, score) in enumerate(ordered):
        xs = [float(point[0]) for point in points]
        ys = [float(point[1]) for point in points]
        left, right, top, bottom = min(xs), max(xs), min(ys), max(ys)
        text = unicodedata.normalize("NFKC", str(text))
        step = (right - left) / max(len(text), 1)
        confidence = min(max(float(score), 0.0), 1.0)
        offset = 0
        for token in text.split(" "):
            if token:
                x0, x1 = left + offset * step, left + (offset + len(token)) * step
                box = normalised_rect(x0, top, x1, bottom, width, height)
                words.append(Word(token, box, confidence, number, 0))
            offset += len(token) + 1
    return words


def _top(points: Sequence[Sequence[float]]) -> float:
    return min(float(point[1]) for point in points)


def _left(points: Sequence[Sequence[float]]) -> float:
    return min(float(point[0]) for point in points)
