"""What the console shows of a document's pages: images rendered on the server (pypdfium2 for
PDFs, Pillow for images) and the words on each page with their boxes, both kept in a bounded
cache folder, sealed (`FileCache`).

Boxes are the engine's normalised page coordinates (0-1, origin top left), so a page image of
any size carries them as percentages. The words are those the engine kept when it processed
the document (`docflow.extraction.words`, see `web.documents_api.read_sample`); for one
processed before words were kept, they are read again from the stored file, by the same readers
as the pipeline (the text layer, else OCR with the process's engine), once per file.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium
import structlog
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from PIL import Image

from docflow.extraction import words
from docflow.extraction.errors import Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, ReadDocument
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.readers import read_pages
from docflow.extraction.readers.image import _frames
from docflow.extraction.readers.ocr_page import Reject
from docflow.extraction.readers.pdf import PDFIUM_LOCK
from docflow.extraction.result import Reading
from docflow.extraction.sniff import sniff_kind
from docflow.extraction.words import page_words

log = structlog.get_logger(__name__)

__all__ = ["page_words"]  # the console's word lists (`docflow.extraction.words`)

# The engine the console reads a scanned page with (the process's Tesseract).
TESSERACT = Reading.TESSERACT.value

# Width of a rendered page in pixels: readable on a screen, a few hundred kB as PNG.
PAGE_WIDTH = 1000
# A page image never holds more pixels (a very tall page is drawn narrower).
MAX_PIXELS = 8_000_000


class PageNotShown(Exception):
    """The page does not exist, or the file cannot be rendered (its reason is safe to show)."""


_NONCE = 12


class FileCache:
    """Files under `root`, at most `max_bytes` in all: the least recently used go first.

    The entries are tenants' page images and words, so each file is sealed (AES-256-GCM under
    a key derived from `secret`, the installation's signing secret, a random nonce, the entry's
    name as associated data): read from the disk without the secret it is not the page, and a
    file copied under another entry's name does not decrypt. An entry that does not decrypt (a
    damaged file, one sealed under a previous secret) is made again, as a missing one is."""

    def __init__(self, root: Path, max_bytes: int, secret: str) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._aead = AESGCM(hashlib.sha256(b"docflow.console-cache\0" + secret.encode()).digest())

    def _path(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode()).hexdigest()
        return self.root / digest[:2] / digest

    def get_or_make(self, key: str, make: Callable[[], bytes]) -> bytes:
        path = self._path(key)
        name = path.name.encode()
        try:
            sealed = path.read_bytes()
            data = self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], name)
            os.utime(path)
            return data
        except (FileNotFoundError, InvalidTag):
            pass
        data = make()
        path.parent.mkdir(parents=True, exist_ok=True)
        nonce = os.urandom(_NONCE)
        temporary = path.with_suffix(f".{threading.get_ident()}.tmp")
        temporary.write_bytes(nonce + self._aead.encrypt(nonce, data, name))
        temporary.replace(path)
        self._trim()
        return data

    def _trim(self) -> None:
        with self._lock:
            files = [(p.stat().st_atime, p.stat().st_size, p) for p in self.root.glob("*/*")]
            total = sum(size for _, size, _ in files)
            for _, size, path in sorted(files, key=lambda f: f[0]):
                if total <= self.max_bytes:
                    break
                path.unlink(missing_ok=True)
                total -= size


def _kind(data: bytes) -> DocumentKind:
    kind = sniff_kind(data)
    if isinstance(kind, Rejected):
        raise PageNotShown(kind.reason)
    return kind


def render_page(data: bytes, number: int, limits: EngineLimits) -> tuple[bytes, str]:
    """Page `number` (1-based) of the file, `PAGE_WIDTH` pixels wide at most, and its media
    type: PNG for a PDF page (sharp text, small), JPEG for a scan or photo (a PNG of one is
    several times larger and slower to make)."""
    kind = _kind(data)
    if kind == DocumentKind.PDF:
        image, media_type = _pdf_page(data, number), "image/png"
    else:
        image, media_type = _image_page(data, kind, number, limits), "image/jpeg"
    image.thumbnail((PAGE_WIDTH, PAGE_WIDTH * 4))
    out = io.BytesIO()
    if media_type == "image/png":
        image.convert("RGB").save(out, format="PNG")
    else:
        image.convert("RGB").save(out, format="JPEG", quality=85)
    return out.getvalue(), media_type


def media_type(image: bytes) -> str:
    """The media type of an image `render_page` made."""
    return "image/png" if image.startswith(b"\x89PNG") else "image/jpeg"


def _pdf_page(data: bytes, number: int) -> Image.Image:
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise PageNotShown("the PDF cannot be opened") from exc
        try:
            if not 1 <= number <= len(document):
                raise PageNotShown(f"the document has no page {number}")
            page = document[number - 1]
            try:
                width, height = page.get_width() or 1.0, page.get_height() or 1.0
                scale = min(PAGE_WIDTH / width, 4.0, (MAX_PIXELS / (width * height)) ** 0.5)
                bitmap = page.render(scale=scale)
                try:
                    return bitmap.to_pil().convert("RGB")
                finally:
                    bitmap.close()
            finally:
                page.close()
        finally:
            document.close()


def _image_page(data: bytes, kind: DocumentKind, number: int, limits: EngineLimits) -> Image.Image:
    try:
        for index, frame in enumerate(_frames(data, kind, limits), start=1):
            if index == number:
                return frame.convert("RGB")
    except Reject as reject:
        raise PageNotShown(reject.reason) from reject
    raise PageNotShown(f"the document has no page {number}")


def read_document(data: bytes, ocr: OcrEngine, limits: EngineLimits) -> ReadDocument:
    """The file's pages as the pipeline's readers read them (the text layer, else OCR)."""
    read = read_pages(data, _kind(data), ocr=ocr, limits=limits)
    if isinstance(read, Rejected):
        raise PageNotShown(read.reason)
    return read


def cached_read(cache: FileCache, key: str, read: Callable[[], ReadDocument]) -> ReadDocument:
    """The read document under `key`, read once (`read`) and then kept in `cache`."""
    return words.loaded(cache.get_or_make(key, lambda: words.dumped(read(), ocr_engine=TESSERACT)))
