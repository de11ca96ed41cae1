"""Text layout helpers: visual rows built from word boxes, and text normalisation for matching.

Rows are built from geometry rather than from the reader's line ids, because an OCR engine often
splits one printed row into several lines when a label and its value sit far apart. The reader's
lines still serve to measure how much a scan is tilted, so that rows follow the tilt.

A row holds at most `MAX_ROW_WORDS` words; a longer printed line (no real document has one) is
cut into consecutive rows of that many, because locators do per-word work over the rest of a
row, which would make one very long line cost the square of its length.
"""

from __future__ import annotations

import itertools
import re
import statistics
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from docflow.extraction.model import Page, Rect, Word

_NUMBER_SIGN = re.compile(r"(n[°º]|no\.|nr\.)\d[\w/.\-]*", re.IGNORECASE)
_MAX_SLOPE = 0.07  # about 4 degrees; more is a layout, not a tilt
MAX_ROW_WORDS = 200


@dataclass(frozen=True, slots=True)
class Row:
    """Words that share a printed line, left to right."""

    page: int
    index: int  # top-to-bottom order on the page
    words: tuple[Word, ...]

    @property
    def text(self) -> str:
        return join_words(self.words)

    @property
    def box(self) -> Rect:
        return union_box(self.words)

    @property
    def height(self) -> float:
        return statistics.median(w.box.height for w in self.words)


def join_words(words: Iterable[Word]) -> str:
    return " ".join(w.text for w in words).strip()


def union_box(words: Iterable[Word]) -> Rect:
    boxes = [w.box for w in words]
    box = boxes[0]
    for other in boxes[1:]:
        box = box.union(other)
    return box


def compact(text: str) -> str:
    """Case-, accent- and punctuation-free form used to compare labels: "Inv. #:" -> "inv#"."""
    folded = unicodedata.normalize("NFKD", text.replace("°", "o")).encode("ascii", "ignore")
    return re.sub(r"[^a-z0-9#]", "", folded.decode().casefold())


def build_rows(page: Page) -> tuple[Row, ...]:
    """Group the page's words into visual rows, top to bottom, each sorted left to right."""
    words = [part for word in page.words if word.text.strip() for part in split_glued(word)]
    if not words:
        return ()
    typical = statistics.median(w.box.height for w in words) or 0.01
    slope = skew(words)

    def level(word: Word) -> float:  # the word's height on the page as if it were straight
        return word.box.cy - slope * word.box.cx

    groups: list[list[Word]] = []
    centre = total = 0.0
    for word in sorted(words, key=lambda w: (level(w), w.box.x0)):
        if groups and abs(level(word) - centre) <= 0.5 * max(typical, word.box.height * 0.8):
            groups[-1].append(word)
            total += level(word)
            centre = total / len(groups[-1])
        else:
            groups.append([word])
            centre = total = level(word)
    lines = [sorted(group, key=lambda w: w.box.x0) for group in groups]
    rows = [
        tuple(line[start : start + MAX_ROW_WORDS])
        for line in lines
        for start in range(0, len(line), MAX_ROW_WORDS)
    ]
    return tuple(Row(page.number, index, row) for index, row in enumerate(rows))


def skew(words: Sequence[Word]) -> float:
    """The page's tilt as a slope (dy per dx), the median over the reader's lines that span a
    fair width; a slightly rotated scan otherwise splits one printed row into two."""
    lines: dict[tuple[int, int], list[Word]] = {}
    for word in words:
        lines.setdefault((word.block, word.line), []).append(word)
    slopes = []
    for line in lines.values():
        first = min(line, key=lambda w: w.box.cx)
        last = max(line, key=lambda w: w.box.cx)
        if len(line) >= 2 and last.box.cx - first.box.cx > 0.1:
            slopes.append((last.box.cy - first.box.cy) / (last.box.cx - first.box.cx))
    if not slopes:
        return 0.0
    return max(-_MAX_SLOPE, min(_MAX_SLOPE, statistics.median(slopes)))


def split_glued(word: Word) -> tuple[Word, ...]:
    """Split "No.:CS81801" into "No.:" and "CS81801", and "n°562044387" into "n°" and
    "562044387": labels and values printed without a space."""
    number = _NUMBER_SIGN.fullmatch(word.text)
    if number:
        return _cut(word, len(number.group(1)), "")
    head, colon, tail = word.text.partition(":")
    if not colon or not head.strip() or not tail.strip() or _is_time(word.text):
        return (word,)
    return _cut(word, len(head) + 1, ":")


def _cut(word: Word, at: int, mark: str) -> tuple[Word, ...]:
    """The word split after `at` characters, the right part split again if it is glued too."""
    x = word.box.x0 + word.box.width * at / len(word.text)
    left = Word(
        word.text[:at],
        Rect(word.box.x0, word.box.y0, x, word.box.y1),
        word.confidence,
        word.line,
        word.block,
    )
    right = Word(
        word.text[at:],
        Rect(x, word.box.y0, word.box.x1, word.box.y1),
        word.confidence,
        word.line,
        word.block,
    )
    return (left, *split_glued(right)) if mark else (left, right)


def _is_time(text: str) -> bool:
    return re.fullmatch(r"\d{1,2}:\d{2}(?::\d{2})?(?:[ap]m)?", text.strip().lower()) is not None


def segment(words: Sequence[Word], gap_factor: float = 2.5) -> list[tuple[Word, ...]]:
    """Split a row's words where the horizontal gap exceeds `gap_factor` times the text height."""
    if not words:
        return []
    parts: list[list[Word]] = [[words[0]]]
    for prev, word in itertools.pairwise(words):
        height = max(prev.box.height, word.box.height)
        if word.box.x0 - prev.box.x1 > gap_factor * height:
            parts.append([word])
        else:
            parts[-1].append(word)
    return [tuple(p) for p in parts]


def is_wordlike(text: str) -> bool:
    """Alphabetic text of two letters or more (a word of a label, not a value)."""
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 2 and not any(ch.isdigit() for ch in text)
