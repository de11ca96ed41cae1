"""Tesseract through its command-line program: one process per page, TSV output.

The reference for benchmarks and a fallback where tesserocr is not available. Each call pays
Tesseract's start-up, so the in-process engine is preferred.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess

from PIL import Image

from docflow.extraction.model import Word
from docflow.extraction.ocr.base import (
    PSM_SINGLE_BLOCK,
    OcrError,
    OcrTimeout,
    image_dpi,
    normalised_rect,
)

_WORD_LEVEL = "5"


class TesseractCliEngine:
    """Runs `tesseract stdin stdout tsv` per page with OMP_THREAD_LIMIT=1."""

    name = "tesseract-cli"

    def __init__(
        self,
        *,
        binary: str = "tesseract",
        lang: str = "eng",
        psm: int = PSM_SINGLE_BLOCK,
        tessdata: str = "",
    ) -> None:
        path = shutil.which(binary)
        if path is None:
            raise OcrError(f"the {binary!r} program is not installed")
        self.binary = path
        self.lang = lang
        self.psm = psm
        self._env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        if tessdata:
            self._env["TESSDATA_PREFIX"] = tessdata

    def command(self, source: str, dpi: int | None = None) -> list[str]:
        """The command line that OCRs `source` (a file name or "stdin") to TSV on stdout."""
        cmd = [self.binary, source, "stdout", "-l", self.lang, "--psm", str(self.psm)]
        if dpi:
            cmd += ["--dpi", str(dpi)]
        return [*cmd, "tsv"]

    def recognize(self, image: Image.Image, *, timeout_s: float) -> list[Word]:
        """Recognise one page; see `OcrEngine`."""
        buffer = io.BytesIO()
        # Uncompressed: PNG compression would cost more than the pipe saves.
        image.save(buffer, format="PNG", compress_level=0)
        try:
            done = subprocess.run(
                self.command("stdin", image_dpi(image)),
                input=buffer.getvalue(),
                capture_output=True,
                timeout=timeout_s,
                env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise OcrTimeout(timeout_s) from exc
        if done.returncode != 0:
            raise OcrError(f"tesseract exited with status {done.returncode}")
        return parse_tsv(done.stdout.decode("utf-8", "replace"), *image.size)


def parse_tsv(tsv: str, width: int, height: int) -> list[Word]:
    """Words from Tesseract's TSV output, with line and block ids numbered within the page."""
    words: list[Word] = []
    lines: dict[tuple[str, str, str], int] = {}
    blocks: dict[str, int] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != _WORD_LEVEL or not text:
            continue
        block = blocks.setdefault(row["block_num"], len(blocks))
        line = lines.setdefault((row["block_num"], row["par_num"], row["line_num"]), len(lines))
        left, top = int(row["left"]), int(row["top"])
        right, bottom = left + int(row["width"]), top + int(row["height"])
        confidence = min(max(float(row["conf"]) / 100.0, 0.0), 1.0)
        box = normalised_rect(left, top, right, bottom, width, height)
        words.append(Word(text, box, confidence, line, block))
    return words
