from __future__ import annotations

from collections.abc import Callable

from tests.support.timing import within

from docflow.extraction.fields.labels import LabelIndex, bounded_levenshtein
from docflow.extraction.fields.layout import MAX_ROW_WORDS, build_rows, compact
from docflow.extraction.model import Page, Rect, TextSource, Word

PageMaker = Callable[..., Page]


def index(page: PageMaker, rows: list[str], *, ocr: bool = False) -> LabelIndex:
    source = TextSource.OCR if ocr else TextSource.TEXT_LAYER
    return LabelIndex(build_rows(page(rows, source=source)), fuzzy=ocr)


def test_compact_drops_case_accents_and_punctuation() -> None:
    assert compact("Inv. #:") == "inv#"
    assert compact("N° Facture") == "nofacture"
    assert compact("Échéance") == "echeance"


def test_label_found_across_words_and_punctuation(page: PageMaker) -> None:
    labels = index(page, ["INVOICE NO.: 123", "InvoiceNo 456", "Invoice   Number 789"])
    assert [h.row.index for h in labels.find("Invoice No")] == [0, 1]
    assert [h.row.index for h in labels.find("invoice number")] == [2]


def test_ocr_noise_tolerated_only_on_ocr_pages_and_long_labels(page: PageMaker) -> None:
    rows = ["Invoice Nurnber: 12", "T0TAL 5.00", "Tota1 Due 3.00"]
    assert index(page, rows).find("Invoice Number") == []
    fuzzy = index(page, rows, ocr=True)
    assert [h.distance for h in fuzzy.find("Invoice Number")] == [2]
    assert fuzzy.find("Tax") == []  # short labels must match exactly
    assert [h.row.index for h in fuzzy.find("Total")] == [1, 2]
    assert fuzzy.find("Total Due")[0].row.index == 2


def test_approximate_label_does_not_swallow_the_start_of_its_value(page: PageMaker) -> None:
    fuzzy = index(page, ["TOTAL RM1. 38"], ocr=True)
    assert [(h.start, h.end) for h in fuzzy.find("Total (RM)")] == []
    assert [(h.start, h.end) for h in fuzzy.find("Total")] == [(0, 1)]


def test_glued_label_and_value_are_split(page: PageMaker) -> None:
    rows = build_rows(page(["Date:14/03/2026 Time 12:30:01", "Facture n°562044387 No.12"]))
    assert [w.text for w in rows[0].words] == ["Date:", "14/03/2026", "Time", "12:30:01"]
    assert [w.text for w in rows[1].words] == ["Facture", "n°", "562044387", "No.", "12"]


def test_rows_group_words_by_vertical_position() -> None:
    words = (
        Word("Total", Rect(0.1, 0.500, 0.2, 0.515), 0.9, 1, 1),
        Word("9.99", Rect(0.8, 0.503, 0.9, 0.518), 0.9, 7, 3),  # another OCR line and block
        Word("Thanks", Rect(0.1, 0.540, 0.3, 0.555), 0.9, 2, 1),
    )
    rows = build_rows(Page(1, 100, 100, TextSource.OCR, words))
    assert [r.text for r in rows] == ["Total 9.99", "Thanks"]


def test_bounded_levenshtein() -> None:
    assert bounded_levenshtein("total", "total", 1) == 0
    assert bounded_levenshtein("tota1", "total", 1) == 1
    assert bounded_levenshtein("tax", "fax", 0) == 1
    assert bounded_levenshtein("invoice", "involce", 2) == 1
    assert bounded_levenshtein("abcdef", "uvwxyz", 2) == 3


def test_rows_follow_the_tilt_of_a_rotated_scan() -> None:
    slope, words = 0.035, []  # about 2 degrees
    for line, (y, texts) in enumerate(
        [(0.1, "Item Qty Price Amount"), (0.115, "Cable 2 5.00 10.00")]
    ):
        for i, text in enumerate(texts.split()):
            x = 0.1 + i * 0.22
            top = y + slope * x
            words.append(Word(text, Rect(x, top, x + 0.08, top + 0.01), 0.9, line, 1))
    rows = build_rows(Page(1, 100, 100, TextSource.OCR, tuple(words)))
    assert [r.text for r in rows] == ["Item Qty Price Amount", "Cable 2 5.00 10.00"]


def test_a_very_long_printed_line_costs_linear_time_and_is_cut_into_rows() -> None:
    """Each word joining a row used to recompute the row's mean height over all its words, and
    locators do per-word work over the rest of a row: one 5000-word line cost its square."""
    count = 5000
    words = tuple(
        Word(f"w{i}", Rect(i / count, 0.5, (i + 0.8) / count, 0.51), 1.0, 0, 0)
        for i in range(count)
    )
    with within(1.0):
        rows = build_rows(Page(1, 100, 100, TextSource.TEXT_LAYER, words))
    assert [len(r.words) for r in rows] == [MAX_ROW_WORDS] * (count // MAX_ROW_WORDS)
    assert [w.text for r in rows for w in r.words] == [w.text for w in words]
    assert [r.index for r in rows] == list(range(len(rows)))
