"""Tesseract in process through tesserocr: engines kept loaded and reused across pages.

Keeping the engine loaded avoids Tesseract's start-up (loading the language model) on every
page, and tesserocr releases the GIL while it recognises, so several threads OCR at once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import structlog
from PIL import Image

from docflow.extraction.model import Word
from docflow.extraction.ocr.base import (
    PSM_SINGLE_BLOCK,
    OcrError,
    OcrTimeout,
    image_dpi,
    normalised_rect,
)

log = structlog.get_logger(__name__)

DEFAULT_TESSDATA = "/usr/share/tesseract-ocr/5/tessdata"

_import_lock = threading.Lock()


def load_tesserocr() -> ModuleType:
    """Import tesserocr with OpenMP limited to one thread per engine.

    OpenMP reads OMP_THREAD_LIMIT once, when the library loads, so it is set just before the
    first import rather than at import time of this module. Parallelism comes from running
    several engines in threads: on a few cores, OpenMP inside each engine makes Tesseract
    several times slower.
    """
    with _import_lock:
        previous = os.environ.get("OMP_THREAD_LIMIT")
        if previous != "1":
            os.environ["OMP_THREAD_LIMIT"] = "1"
            if previous is not None:
                log.warning("ocr.omp_thread_limit_overridden", previous=previous)
        import tesserocr

        return tesserocr


class _ApiPool:
    """Initialised `PyTessBaseAPI`s: a call borrows an idle one, or starts one if all are busy.

    An API is not thread-safe, so one is never lent to two threads at once; the pool grows to
    the number of threads that OCR at the same time (at most `limit`: a thread past it waits for
    an API to come back) and stays loaded for later pages.
    """

    def __init__(self, start: Callable[[], Any], limit: int | None = None) -> None:
        self._start = start
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(limit) if limit else None

    @contextlib.contextmanager
    def borrow(self) -> Iterator[Any]:
        if self._slots is not None:
            self._slots.acquire()
        try:
            try:
                api = self._idle.get_nowait()
            except queue.Empty:
                api = self._start()
                with self._lock:
                    self._all.append(api)
            try:
                yield api
            finally:
                api.Clear()
                self._idle.put(api)
        finally:
            if self._slots is not None:
                self._slots.release()

    def __len__(self) -> int:
        with self._lock:
            return len(self._all)

    def close(self) -> None:
        with self._lock:
            apis, self._all = self._all, []
        for api in apis:
            api.End()


class TesserocrEngine:
    """Tesseract through tesserocr, with a pool of loaded engines (one per busy thread)."""

    name = "tesserocr"

    def __init__(
        self,
        *,
        datapath: str = DEFAULT_TESSDATA,
        lang: str = "eng",
        psm: int = PSM_SINGLE_BLOCK,
        variables: dict[str, str] | None = None,
        max_engines: int | None = None,
    ) -> None:
        self._tesserocr = load_tesserocr()
        self.datapath = datapath
        self.lang = lang
        self.psm = psm
        self.variables = dict(variables or {})
        start = functools.partial(self._start, lang, psm, self.variables)
        self._pool = _ApiPool(start, max_engines)
        # Page segmentation mode 0: orientation and script detection only.
        self._osd_pool = _ApiPool(functools.partial(self._start, "osd", 0, {}), max_engines)
        with self._pool.borrow():  # fail now on a bad datapath or language
            pass

    def _start(self, lang: str, psm: int, variables: dict[str, str]) -> Any:
        try:
            api = self._tesserocr.PyTessBaseAPI(
                path=self.datapath, lang=lang, psm=psm, variables=variables or None
            )
        except RuntimeError as exc:
            raise OcrError(f"Tesseract could not start with language {lang!r}") from exc
        log.info("ocr.engine_started", engine=self.name, lang=lang)
        return api

    @property
    def pool_size(self) -> int:
        """How many recognition engines are loaded (busy or idle)."""
        return len(self._pool)

    def recognize(self, image: Image.Image, *, timeout_s: float) -> list[Word]:
        """Recognise one page; see `OcrEngine`."""
        with self._pool.borrow() as api:
            return self._recognize_with(api, image, timeout_s)

    def _recognize_with(self, api: Any, image: Image.Image, timeout_s: float) -> list[Word]:
        gray = image if image.mode == "L" else image.convert("L")
        width, height = gray.size
        api.SetImageBytes(gray.tobytes(), width, height, 1, width)
        dpi = image_dpi(image)
        if dpi:
            api.SetSourceResolution(dpi)
        started = time.monotonic()
        if not api.Recognize(timeout=max(1, int(timeout_s * 1000))):
            if time.monotonic() - started >= timeout_s * 0.95:
                raise OcrTimeout(timeout_s)
            raise OcrError("Tesseract failed to recognise the page")
        return self._words(api, width, height)

    def _words(self, api: Any, width: int, height: int) -> list[Word]:
        ril = self._tesserocr.RIL
        iterator = api.GetIterator()
        words: list[Word] = []
        line = block = -1
        if iterator is None:
            return words
        for item in self._tesserocr.iterate_level(iterator, ril.WORD):
            if item.IsAtBeginningOf(ril.BLOCK):
                block += 1
            if item.IsAtBeginningOf(ril.TEXTLINE):
                line += 1
            if item.Empty(ril.WORD):
                continue
            text = (item.GetUTF8Text(ril.WORD) or "").strip()
            box = item.BoundingBox(ril.WORD)
            if not text or box is None:
                continue
            confidence = min(max(item.Confidence(ril.WORD) / 100.0, 0.0), 1.0)
            left, top, right, bottom = box
            rect = normalised_rect(left, top, right, bottom, width, height)
            words.append(Word(text, rect, confidence, max(line, 0), max(block, 0)))
        return words

    def detect_orientation(self, image: Image.Image) -> int:
        """Clockwise rotation in degrees (0, 90, 180, 270) that the page shows, per OSD.

        0 when OSD is unsure or finds too little text; needs osd.traineddata in the datapath.
        """
        gray = image if image.mode == "L" else image.convert("L")
        with self._osd_pool.borrow() as api:
            api.SetImageBytes(gray.tobytes(), gray.width, gray.height, 1, gray.width)
            result = api.DetectOrientationScript()
        if not result or result.get("orient_conf", 0.0) < 2.0:
            return 0
        return int(result["orient_deg"]) % 360

    def close(self) -> None:
        """Release every engine; the object must not be used afterwards."""
        self._pool.close()
        self._osd_pool.close()
