"""Finding label phrases on a page, tolerant to OCR noise.

A label matches a run of consecutive words in a row when their compact forms (case, accents and
punctuation removed) joined together equal the label's compact form, so "INVOICE NO.:", "Invoice
No" and "InvoiceNo" all match "Invoice No". On OCR pages a few wrong characters are tolerated: none
for labels of four characters or fewer, one up to eight, two beyond.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from docflow.extraction.fields.layout import Row, compact, union_box
from docflow.extraction.model import Rect

_MAX_WORDS = 6


@dataclass(frozen=True, slots=True)
class LabelHit:
    row: Row
    start: int  # first word of the label in the row
    end: int  # one past the last word
    distance: int  # characters wrong

    @property
    def box(self) -> Rect:
        return union_box(self.row.words[self.start : self.end])


def allowed_errors(key: str) -> int:
    if len(key) <= 4:
        return 0
    return 1 if len(key) <= 8 else 2


class LabelIndex:
    """All word runs of one page, indexed for exact and approximate label lookup."""

    def __init__(self, rows: tuple[Row, ...], *, fuzzy: bool) -> None:
        self.rows = rows
        self.fuzzy = fuzzy
        self._exact: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
        # Per length, the runs' texts (what the fuzzy match scans, in C) and where each run is.
        self._texts: dict[int, list[str]] = defaultdict(list)
        self._runs: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        self._cache: dict[str, list[LabelHit]] = {}
        self._last: dict[tuple[int, int], str] = {}
        for r, row in enumerate(rows):
            keys = [compact(w.text) for w in row.words]
            for j, key in enumerate(keys):
                self._last[(r, j + 1)] = key
            for i in range(len(keys)):
                if not keys[i]:
                    continue
                joined = ""
                for j in range(i, min(i + _MAX_WORDS, len(keys))):
                    joined += keys[j]
                    if keys[j]:
                        self._exact[joined].append((r, i, j + 1))
                        self._texts[len(joined)].append(joined)
                        self._runs[len(joined)].append((r, i, j + 1))

    def find(self, label: str) -> list[LabelHit]:
        """Occurrences of `label`, best first (fewest errors, then top to bottom)."""
        if label not in self._cache:
            key = compact(label)
            self._cache[label] = self._lookup(key) if key else []
        return self._cache[label]

    def find_exact(self, label: str) -> list[LabelHit]:
        """Occurrences of `label`'s compact form with no character wrong, top to bottom: a
        dictionary lookup, whatever the page's size."""
        key = compact(label)
        return [LabelHit(self.rows[r], i, end, 0) for r, i, end in self._exact.get(key, ())]

    def _lookup(self, key: str) -> list[LabelHit]:
        found: dict[tuple[int, int], tuple[int, int]] = {}
        for r, i, end in self._exact.get(key, ()):
            found.setdefault((r, i), (0, end))
        limit = allowed_errors(key) if self.fuzzy else 0
        lengths = range(len(key) - limit, len(key) + limit + 1) if limit else range(0)
        digits_free = not any(ch.isdigit() for ch in key)
        for length in lengths:
            texts = self._texts.get(length)
            if not texts:
                continue
            runs = self._runs[length]
            near = process.extract(
                key, texts, scorer=Levenshtein.distance, score_cutoff=limit, limit=None
            )
            for _, distance, n in sorted(near, key=lambda m: m[2]):
                r, i, end = runs[n]
                if (r, i) in found and found[(r, i)][0] == 0:
                    continue
                if digits_free and end - i > 1 and any(ch.isdigit() for ch in self._last[(r, end)]):
                    continue  # "TOTAL RM1." is a label and the start of its value, not a label
                best = found.get((r, i))
                if best is None or distance < best[0]:
                    found[(r, i)] = (int(distance), end)
        hits = [LabelHit(self.rows[r], i, end, d) for (r, i), (d, end) in found.items()]
        return sorted(hits, key=lambda h: (h.distance, h.row.index, h.start))


def bounded_levenshtein(a: str, b: str, limit: int) -> int:
    """Edit distance of `a` and `b`, or `limit + 1` as soon as it must exceed `limit`."""
    if a == b:
        return 0
    if abs(len(a) - len(b)) > limit or limit == 0:
        return limit + 1
    return int(Levenshtein.distance(a, b, score_cutoff=limit))
