from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import pikepdf
import pytest
from PIL import Image
from tests.support.timing import within

from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import DocumentKind, ReadDocument, Rect, TextSource, Word
from docflow.extraction.ocr import FakeOcrEngine
from docflow.extraction.readers import read_document

A4_W, A4_H = 595.2756, 841.8898
OCR_WORD = Word("scanned", Rect(0.1, 0.1, 0.3, 0.15), 0.8, 0, 0)


def read(data: bytes, ocr: FakeOcrEngine | None = None, **limits: object) -> ReadDocument:
    result = read_document(data, ocr=ocr or FakeOcrEngine(), limits=EngineLimits(**limits))
    assert isinstance(result, ReadDocument), result
    return result


def reject_code(data: bytes, **limits: object) -> RejectCode:
    result = read_document(data, ocr=FakeOcrEngine(), limits=EngineLimits(**limits))
    assert isinstance(result, Rejected), result
    assert result.reason
    return result.code


def test_text_layer_words_land_where_drawn(text_pdf) -> None:
    data = text_pdf([[(72, 100, "Invoice Number: INV-001"), (300, 400, "Total 1,234.56")]])
    ocr = FakeOcrEngine([OCR_WORD])
    document = read(data, ocr)
    assert document.kind == DocumentKind.PDF
    (page,) = document.pages
    assert page.source == TextSource.TEXT_LAYER and ocr.calls == 0
    assert (page.number, round(page.width), round(page.height)) == (1, 595, 842)
    assert [w.text for w in page.words] == ["Invoice", "Number:", "INV-001", "Total", "1,234.56"]
    invoice, _, number, total, amount = page.words
    # drawString puts the baseline at y; the box spans the font's ascent and descent.
    assert invoice.box.x0 == pytest.approx(72 / A4_W, abs=0.002)
    assert invoice.box.y0 < 100 / A4_H < invoice.box.y1
    assert invoice.box.height == pytest.approx(12 / A4_H, rel=0.35)
    assert amount.box.x0 > total.box.x1 > total.box.x0 == pytest.approx(300 / A4_W, abs=0.002)
    assert total.box.y0 < 400 / A4_H < total.box.y1
    assert number.box.x1 < 0.5 and all(w.confidence == 1.0 for w in page.words)
    assert invoice.line == number.line != total.line
    assert invoice.block != total.block  # far apart vertically


def test_lines_and_blocks_follow_the_layout(text_pdf) -> None:
    placed = [(72, 100, "first line"), (72, 114, "second line"), (72, 300, "after a gap")]
    words = read(text_pdf([placed])).pages[0].words
    lines = [w.line for w in words]
    blocks = [w.block for w in words]
    assert lines == [0, 0, 1, 1, 2, 2, 2]
    assert blocks == [0, 0, 0, 0, 1, 1, 1]


def test_words_positioned_apart_without_spaces_are_separate(text_pdf) -> None:
    data = text_pdf([[(72, 100, "Qty"), (110, 100, "Price")]])
    words = read(data, min_text_chars=1).pages[0].words
    assert [w.text for w in words] == ["Qty", "Price"]


def test_rotated_page_boxes_follow_the_display(text_pdf) -> None:
    pdf = pikepdf.open(io.BytesIO(text_pdf([[(72, 100, "Rotated heading text")]])))
    pdf.pages[0].Rotate = 90
    buffer = io.BytesIO()
    pdf.save(buffer)
    page = read(buffer.getvalue()).pages[0]
    assert (round(page.width), round(page.height)) == (842, 595)
    word = page.words[0]
    # Turned clockwise: the top-left of the unrotated page is now at the top right.
    assert word.box.x1 == pytest.approx(1 - (100 - 12) / A4_H, abs=0.02)
    assert word.box.y0 == pytest.approx(72 / A4_W, abs=0.003)
    assert word.box.height > word.box.width  # the text now runs downwards


def scanned_pdf(image_bytes, pages: int = 1) -> bytes:
    image = Image.new("L", (850, 1100), "white")
    return image_bytes([image] * pages, "PDF", resolution=100.0)


def test_page_without_text_layer_is_rendered_and_ocred(image_bytes) -> None:
    ocr = FakeOcrEngine([OCR_WORD])
    document = read(scanned_pdf(image_bytes), ocr, dpi=150)
    (page,) = document.pages
    assert page.source == TextSource.OCR and page.words == (OCR_WORD,)
    assert ocr.calls == 1
    # 8.5 x 11 inch page: size stays in points, the rendering follows the dpi.
    assert (round(page.width), round(page.height)) == (612, 792)
    width, height = ocr.sizes[0]
    assert width == pytest.approx(8.5 * 150, abs=2) and height == pytest.approx(11 * 150, abs=2)


def test_mixed_pdf_ocrs_only_the_pages_without_text(text_pdf, image_bytes) -> None:
    text = pikepdf.open(io.BytesIO(text_pdf([[(72, 72, "A page with a real text layer")]])))
    scan = pikepdf.open(io.BytesIO(scanned_pdf(image_bytes)))
    text.pages.extend(scan.pages)
    buffer = io.BytesIO()
    text.save(buffer)
    ocr = FakeOcrEngine([OCR_WORD])
    pages = read(buffer.getvalue(), ocr).pages
    assert [p.source for p in pages] == [TextSource.TEXT_LAYER, TextSource.OCR]
    assert ocr.calls == 1


def test_short_text_layer_counts_as_missing(text_pdf) -> None:
    ocr = FakeOcrEngine([OCR_WORD])
    page = read(text_pdf([[(72, 72, "p. 1")]]), ocr, min_text_chars=16).pages[0]
    assert page.source == TextSource.OCR and ocr.calls == 1


def test_too_many_pages(text_pdf) -> None:
    data = text_pdf([[(72, 72, f"page {n} of a text document")] for n in range(3)])
    assert reject_code(data, max_pages=2) == RejectCode.TOO_MANY_PAGES
    assert len(read(data, max_pages=3).pages) == 3


def test_truncated_pdf_is_corrupt(text_pdf) -> None:
    data = text_pdf([[(72, 72, "Invoice")]])
    assert reject_code(data[: len(data) // 3]) == RejectCode.CORRUPT_FILE


def test_garbage_after_pdf_header_is_corrupt() -> None:
    assert reject_code(b"%PDF-1.7\n" + bytes(range(256)) * 20) == RejectCode.CORRUPT_FILE


def test_encrypted_pdf_is_refused(text_pdf) -> None:
    source = pikepdf.open(io.BytesIO(text_pdf([[(72, 72, "Secret")]])))
    buffer = io.BytesIO()
    source.save(buffer, encryption=pikepdf.Encryption(user="secret", owner="owner"))
    assert reject_code(buffer.getvalue()) == RejectCode.ENCRYPTED_PDF


def test_pdf_with_only_an_owner_password_is_read(text_pdf) -> None:
    source = pikepdf.open(io.BytesIO(text_pdf([[(72, 72, "Restricted but readable")]])))
    buffer = io.BytesIO()
    source.save(buffer, encryption=pikepdf.Encryption(user="", owner="owner"))
    assert read(buffer.getvalue()).pages[0].words[0].text == "Restricted"


def test_ocr_timeout_is_reported(image_bytes) -> None:
    limits = EngineLimits(dpi=100)
    result = read_document(scanned_pdf(image_bytes), ocr=FakeOcrEngine(timeout=True), limits=limits)
    assert isinstance(result, Rejected) and result.code == RejectCode.OCR_TIMEOUT


def blank_pdf(width: float, height: float) -> bytes:
    """One page of `width` x `height` points without a text layer (so it must be OCRed)."""
    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=(width, height))
    buffer = io.BytesIO()
    pdf.save(buffer)
    return buffer.getvalue()


def test_a_page_too_large_at_the_dpi_fails_image_too_large_before_rendering() -> None:
    # 200 x 200 inches: 3.6 billion pixels at 300 dpi. Rendering a lower resolution instead
    # would read the page at 39 dpi, where no text is legible.
    ocr = FakeOcrEngine([OCR_WORD])
    with within(1.0):  # no 3.6 GB bitmap was allocated
        result = read_document(blank_pdf(14_400, 14_400), ocr=ocr, limits=EngineLimits(dpi=300))
    assert isinstance(result, Rejected) and result.code == RejectCode.IMAGE_TOO_LARGE
    assert result.reason == (
        "page 1 is too large to read: at 300 dpi it would be 60000 x 60000 pixels; "
        "at most 60000000 pixels are accepted"
    )
    assert ocr.calls == 0


def test_the_pixel_limit_applies_at_the_configured_dpi() -> None:
    a3 = blank_pdf(842, 1191)  # 3509 x 4963 pixels at 300 dpi, 1754 x 2482 at 150
    assert reject_code(a3, dpi=300, max_pixels=10_000_000) == RejectCode.IMAGE_TOO_LARGE
    ocr = FakeOcrEngine([OCR_WORD])
    (page,) = read(a3, ocr, dpi=150, max_pixels=10_000_000).pages
    assert page.source == TextSource.OCR and ocr.sizes == [(1755, 2482)]


def test_pdfs_are_read_from_several_threads_at_once(text_pdf, image_bytes) -> None:
    text = text_pdf([[(72, 72 + 14 * n, f"Line {n} of a text page") for n in range(40)]] * 3)
    scan = scanned_pdf(image_bytes, pages=2)
    expected = read(text)

    def work(n: int) -> ReadDocument:
        data = text if n % 2 else scan
        return read(data, FakeOcrEngine([OCR_WORD]), dpi=36)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(48)))
    assert all(r == expected for r in results[1::2])
    assert all(r.pages[1].words == (OCR_WORD,) for r in results[0::2])
