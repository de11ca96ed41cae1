"""Reading one image from several threads at once, for the OCR engines' concurrency tests."""

from __future__ import annotations

import threading

from PIL import Image

from docflow.extraction.ocr.base import OcrEngine


def read_from_threads(
    engine: OcrEngine, image: Image.Image, *, threads: int, timeout_s: float
) -> list[list[str]]:
    """The words each of `threads` threads read from `image`, all started together."""
    results: list[list[str]] = []
    barrier = threading.Barrier(threads)

    def work() -> None:
        barrier.wait()
        results.append([w.text for w in engine.recognize(image, timeout_s=timeout_s)])

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results
