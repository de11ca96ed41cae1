"""The three locators: label anchors, template regions (optionally anchored) and patterns.

Each turns a locator of the workflow definition into candidates; none decides the final value
(see `combine`). Scores say how certain a locator is of its own find: an exact label with the
value right beside it scores 1.0, a value below the label 0.85, each label-like word skipped
between label and value or standing just before the label multiplies by 0.6, each wrong character
of an approximately matched label by 0.9; a value that does not parse keeps a quarter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from docflow.extraction.definition import LabelLocator, PatternLocator
from docflow.extraction.fields.candidates import Candidate, FieldSpec, read_value
from docflow.extraction.fields.labels import LabelHit
from docflow.extraction.fields.layout import Row, is_wordlike, segment
from docflow.extraction.fields.view import DocumentView, PageView
from docflow.extraction.model import Word

BELOW = 0.85
SKIP_PENALTY = 0.6
INVALID = 0.25
FIRST_MATCH, LATER_MATCH = 0.9, 0.75


def label_candidates(
    view: DocumentView, spec: FieldSpec, locator: LabelLocator, *, base: float = 1.0
) -> list[Candidate]:
    """A candidate per occurrence of any of the labels, the value right of it or below it."""
    found: list[Candidate] = []
    for page in view.pages:
        for hit in _distinct_hits(page, locator.labels):
            quality = base * 0.9**hit.distance * _preceded_penalty(hit)
            candidate = None
            if locator.direction in ("right", "any"):
                candidate = _right_of(spec, hit, quality)
            if locator.direction == "below" or (
                locator.direction == "any" and (candidate is None or candidate.error)
            ):
                below = _below(spec, page, hit, quality * BELOW)
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


def _preceded_penalty(hit: LabelHit) -> float:
    """ "Sub Total" is not "Total": a word-like word right before the label, in the same phrase,
    means the label is the tail of a longer one."""
    if hit.start == 0:
        return 1.0
    before, first = hit.row.words[hit.start - 1], hit.row.words[hit.start]
    close = first.box.x0 - before.box.x1 < 1.5 * max(first.box.height, before.box.height)
    if close and is_wordlike(before.text) and not before.text.endswith((":", ")")):
        return SKIP_PENALTY
    return 1.0


def _right_of(spec: FieldSpec, hit: LabelHit, quality: float) -> Candidate | None:
    return _read(spec, hit.row.words[hit.end :], hit.row.page, quality)


def _below(spec: FieldSpec, page: PageView, hit: LabelHit, quality: float) -> Candidate | None:
    label_box = hit.box
    slack = 0.5 * label_box.width
    limit = label_box.y1 + 3 * max(hit.row.height, label_box.height)
    for row in page.rows[hit.row.index + 1 : hit.row.index + 3]:
        if row.box.y0 > limit:
            return None
        overlapping = [
            i
            for i, w in enumerate(row.words)
            if w.box.x1 >= label_box.x0 - slack and w.box.x0 <= label_box.x1 + slack
        ]
        if overlapping:
            return _read(spec, _run_from(row, overlapping[0]), row.page, quality)
    return None


def _run_from(row: Row, start: int) -> tuple[Word, ...]:
    return segment(row.words[start:])[0]


def _read(spec: FieldSpec, words: Sequence[Word], page: int, quality: float) -> Candidate | None:
    """The candidate read from `words`; when nothing parses, the first run as an invalid one."""
    reading = read_value(spec, words)
    if reading is not None:
        run, skipped = reading
        return spec.candidate(run, page, quality * SKIP_PENALTY**skipped, "label")
    runs = segment(tuple(w for w in words if w.text.strip()))
    if not runs:
        return None
    return spec.candidate(runs[0], page, quality * INVALID, "label")


def pattern_candidates(
    view: DocumentView, spec: FieldSpec, locator: PatternLocator, *, base: float = 1.0
) -> list[Candidate]:
    """Each match of the pattern in a row's text; the first group, or the whole match, is the
    value. The first match in the document scores higher than later ones."""
    regex = re.compile(locator.pattern)
    found: list[Candidate] = []
    for page in view.pages:
        for row in page.rows:
            for match in regex.finditer(row.text):
                group = 1 if regex.groups and match.group(1) is not None else 0
                words = _words_in_span(row, match.start(group), match.end(group))
                if not words:
                    continue
                score = base * (FIRST_MATCH if not found else LATER_MATCH)
                candidate = spec.candidate(words, row.page, score, "pattern", match.group(group))
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
