"""Page images and page words for the console: rendered from real generated documents, bounded
in size, cached within a size limit in sealed files (a cache file that does not open is made again);
a page that does not exist, or a damaged file, is refused."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
import reportlab.pdfgen.canvas
from PIL import Image

from docflow.corpus.generate import make_document
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.fake import FakeOcrEngine
from docflow.web import pages

LIMITS = EngineLimits()
SECRET = "the installation's signing secret"


def _pdf(size: tuple[float, float]) -> bytes:
    out = io.BytesIO()
    canvas = reportlab.pdfgen.canvas.Canvas(out, pagesize=size)
    canvas.drawString(10, 10, "Invoice No 42 Total 12.50 and enough text for a text layer")
    canvas.showPage()
    canvas.save()
    return out.getvalue()


def test_a_pdf_page_renders_at_the_console_width_and_its_words_have_boxes() -> None:
    data = make_document(7, 0).pdf
    rendered, media_type = pages.render_page(data, 1, LIMITS)
    image = Image.open(io.BytesIO(rendered))
    assert (image.format, media_type, pages.media_type(rendered)) == ("PNG",) + ("image/png",) * 2
    assert image.width == pages.PAGE_WIDTH
    read = pages.read_document(data, FakeOcrEngine(), LIMITS)
    words = pages.page_words(read)
    assert len(words) == 1 and len(words[0]) > 10
    for word in words[0]:
        x0, y0, x1, y1 = word["box"]
        assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 and word["text"]


def test_a_very_tall_page_is_drawn_within_the_pixel_bound() -> None:
    image = Image.open(io.BytesIO(pages.render_page(_pdf((200, 14_000)), 1, LIMITS)[0]))
    assert image.width * image.height <= pages.MAX_PIXELS


def test_an_image_page_renders_and_tiff_pages_are_numbered() -> None:
    frames = [Image.new("RGB", (1600, 2000), color) for color in ("white", "gray")]
    out = io.BytesIO()
    frames[0].save(out, format="TIFF", save_all=True, append_images=frames[1:])
    rendered, media_type = pages.render_page(out.getvalue(), 2, LIMITS)
    second = Image.open(io.BytesIO(rendered))
    assert (second.format, media_type, pages.media_type(rendered)) == ("JPEG",) + (
        "image/jpeg",
    ) * 2
    assert second.width == pages.PAGE_WIDTH
    assert all(abs(c - 128) <= 2 for c in second.getpixel((5, 5)))  # the gray page
    with pytest.raises(pages.PageNotShown, match="no page 3"):
        pages.render_page(out.getvalue(), 3, LIMITS)


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"", "empty"), (b"%PDF-1.7 broken", "PDF"), (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "PNG")],
)
def test_a_damaged_file_is_refused_with_a_reason(data: bytes, message: str) -> None:
    with pytest.raises(pages.PageNotShown, match=message):
        pages.render_page(data, 1, LIMITS)


def test_the_cache_serves_again_and_stays_within_its_size(tmp_path: Path) -> None:
    cache = pages.FileCache(tmp_path, max_bytes=2500, secret=SECRET)
    made: list[str] = []

    def make(key: str) -> bytes:
        made.append(key)
        return key.encode() * (1000 // len(key))

    assert cache.get_or_make("aaaa", lambda: make("aaaa")) == cache.get_or_make(
        "aaaa", lambda: make("x")
    )
    assert made == ["aaaa"]
    old = time.time() - 100
    for path in tmp_path.glob("*/*"):
        os.utime(path, (old, old))
    cache.get_or_make("bbbb", lambda: make("bbbb"))
    cache.get_or_make("cccc", lambda: make("cccc"))  # over 2500 bytes: the oldest goes
    cache.get_or_make("aaaa", lambda: make("aaaa"))
    assert made == ["aaaa", "bbbb", "cccc", "aaaa"]
    assert sum(p.stat().st_size for p in tmp_path.glob("*/*")) <= 2500


def test_the_cache_files_are_sealed_and_one_that_does_not_open_is_made_again(
    tmp_path: Path,
) -> None:
    cache = pages.FileCache(tmp_path, max_bytes=10_000, secret=SECRET)
    page = b"the words of a tenant's page " * 20
    assert cache.get_or_make("read:tenants/t/a.pdf", lambda: page) == page
    (stored,) = tmp_path.glob("*/*")
    assert page[:20] not in stored.read_bytes()  # on the disk it is not the page
    # Under another secret (a new installation's) the entry is made again, not misread.
    other = pages.FileCache(tmp_path, max_bytes=10_000, secret="another secret")
    assert other.get_or_make("read:tenants/t/a.pdf", lambda: b"made again") == b"made again"
    # A damaged file, or one copied under another entry's name, is made again too.
    sealed = stored.read_bytes()
    stored.write_bytes(sealed[:-1] + bytes([sealed[-1] ^ 1]))
    assert other.get_or_make("read:tenants/t/a.pdf", lambda: page) == page
    moved = other._path("read:tenants/u/b.pdf")
    moved.parent.mkdir(parents=True, exist_ok=True)
    moved.write_bytes(stored.read_bytes())
    assert other.get_or_make("read:tenants/u/b.pdf", lambda: b"b's page") == b"b's page"
