"""Label and pattern locators (template regions are in `regions`).

Each turns a locator of the workflow definition into candidates; none decides the final value
(see `combine`). Scores say how certain a locator is of its own find: an exact label with the
value right beside it scores 1.0; a short one-word label ("Tax", "Date") 0.95, so a longer, more
specific label found at the same place wins; a value below the label 0.85; a label right after
another word of the same phrase ("Sub Total" for "Total"), or above a value while running on
into more words ("Invoice" of "Invoice Date"), 0.6; each wrong character of an
approximately matched label 0.9; the words between label and value cost what `gap_penalty` says;
a value that does not parse keeps a quarter. A pattern locator reads at most `MAX_MATCHES` matches
of a document (see `patterns`): a pattern matching everywhere would otherwise cost the matches
times the words of their rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from docflow.extraction.definition import LabelLocator, PatternLocator
from docflow.extraction.fields.candidates import Candidate, FieldSpec, read_value
from docflow.extraction.fields.labels import LabelHit
from docflow.extraction.fields.layout import Row, compact, is_wordlike, segment
from docflow.extraction.fields.view import DocumentView, PageView
from docflow.extraction.model import Rect, Word
from docflow.extraction.patterns import MAX_MATCHES, find_all

BELOW = 0.85
SHORT_LABEL = 0.95
SKIP_PENALTY = 0.6
# In a header row of column labels, only a word at normal word spacing belongs to the same label.
TIGHT_GAP = 0.6
INVALID = 0.25
FIRST_MATCH, LATER_MATCH = 0.9, 0.75


def label_candidates(
    view: DocumentView, spec: FieldSpec, locator: LabelLocator, *, base: float = 1.0
) -> list[Candidate]:
    """A candidate per occurrence of any of the labels, the value right of it or below it."""
    found: list[Candidate] = []
    for page in view.pages:
        for hit in _distinct_hits(page, locator.labels):
            quality = base * 0.9**hit.distance * _specificity(hit)
            candidate = None
            if locator.direction in ("right", "any"):
                candidate = _right_of(spec, hit, quality * _preceded_penalty(hit))
            if locator.direction == "below" or (
                locator.direction == "any" and (candidate is None or candidate.error)
            ):
                phrase = _followed_penalty(hit) * _preceded_penalty(hit, gap=TIGHT_GAP)
                below = _below(spec, page, hit, quality * BELOW * phrase)
                candidate = below if below is not None else candidate
            if candidate is not None:
                found.append(candidate)
    return found


def _distinct_hits(page: PageView, labels: Sequence[str]) -> list[LabelHit]:
    """Hits of all labels; where several start on the same word the longest label wins."""
    best: dict[tuple[int, int], LabelHit] = {}
    for label in labels:
        for hit in page.labels.find(label):
            key = (hit.row.index, hit.start)
            if key not in best or (hit.end, -hit.distance) > (best[key].end, -best[key].distance):
                best[key] = hit
    return sorted(best.values(), key=lambda h: (h.row.index, h.start))


def _specificity(hit: LabelHit) -> float:
    short = hit.end - hit.start == 1 and len(compact(hit.row.words[hit.start].text)) <= 4
    return SHORT_LABEL if short else 1.0


def _preceded_penalty(hit: LabelHit, gap: float = 1.5) -> float:
    """ "Sub Total" is not "Total": a word-like word right before the label, in the same phrase,
    means the label is the tail of a longer one."""
    if hit.start == 0:
        return 1.0
    before, first = hit.row.words[hit.start - 1], hit.row.words[hit.start]
    close = first.box.x0 - before.box.x1 < gap * max(first.box.height, before.box.height)
    if close and is_wordlike(before.text) and not before.text.endswith((":", ")")):
        return SKIP_PENALTY
    return 1.0


def _followed_penalty(hit: LabelHit) -> float:
    """ "Invoice" heading "Invoice Date" is not a label of its own: above a value, a label that
    runs on into more words of the same phrase is discounted like one that is a phrase's tail."""
    if hit.end >= len(hit.row.words) or hit.row.words[hit.end - 1].text.endswith(":"):
        return 1.0
    last, after = hit.row.words[hit.end - 1], hit.row.words[hit.end]
    close = after.box.x0 - last.box.x1 < 1.5 * max(after.box.height, last.box.height)
    return SKIP_PENALTY if close and is_wordlike(after.text) else 1.0


def _right_of(spec: FieldSpec, hit: LabelHit, quality: float) -> Candidate | None:
    return _read(spec, hit.row.words[hit.end :], hit.row.page, quality)


def _below(spec: FieldSpec, page: PageView, hit: LabelHit, quality: float) -> Candidate | None:
    label_box = hit.box
    slack = 0.5 * label_box.width
    limit = label_box.y1 + 3 * max(hit.row.height, label_box.height)
    for row in page.rows[hit.row.index + 1 : hit.row.index + 3]:
        if row.box.y0 > limit:
            return None
        near = [
            i
            for i, w in enumerate(row.words)
            if w.box.x1 >= label_box.x0 - slack and w.box.x0 <= label_box.x1 + slack
        ]
        if near:
            # In a header row of several labels, the value sits under its own label.
            first = max(near, key=lambda i: _overlap(row.words[i].box, label_box))
            return _read(spec, _run_from(row, first), row.page, quality)
    return None


def _overlap(box: Rect, label: Rect) -> tuple[float, float]:
    width = min(box.x1, label.x1) - max(box.x0, label.x0)
    return (max(0.0, width), -abs(box.x0 - label.x0))


def _run_from(row: Row, start: int) -> tuple[Word, ...]:
    return segment(row.words[start:])[0]


def _read(spec: FieldSpec, words: Sequence[Word], page: int, quality: float) -> Candidate | None:
    """The candidate read from `words`; when nothing parses as a typed field's type, the first
    run as an invalid one (so the result can show what was printed there)."""
    reading = read_value(spec, words)
    if reading is not None:
        run, penalty = reading
        return spec.candidate(run, page, quality * penalty, "label")
    runs = segment(tuple(w for w in words if w.text.strip()))
    if not runs or not spec.typed:
        return None
    return spec.candidate(runs[0], page, quality * INVALID, "label")


def pattern_candidates(
    view: DocumentView, spec: FieldSpec, locator: PatternLocator, *, base: float = 1.0
) -> list[Candidate]:
    """Each match of the pattern in a row's text; the first group, or the whole match, is the
    value. The first match in the document scores higher than later ones."""
    found: list[Candidate] = []
    budget = MAX_MATCHES
    for page in view.pages:
        for row in page.rows:
            if budget <= 0:
                return found
            for match in find_all(locator.pattern, row.text, limit=budget):
                budget -= 1
                words = _words_in_span(row, match.start, match.end)
                if not words:
                    continue
                score = base * (FIRST_MATCH if not found else LATER_MATCH)
                candidate = spec.candidate(words, row.page, score, "pattern", match.text)
                if candidate.error:
                    candidate = _weaken(candidate)
                found.append(candidate)
    return found


def _words_in_span(row: Row, start: int, end: int) -> tuple[Word, ...]:
    picked, offset = [], 0
    for word in row.words:
        word_end = offset + len(word.text)
        if word_end > start and offset < end:
            picked.append(word)
        offset = word_end + 1
    return tuple(picked)


def _weaken(candidate: Candidate) -> Candidate:
    return replace(candidate, score=candidate.score * INVALID)
