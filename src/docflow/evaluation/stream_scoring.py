"""The figures of a stream evaluation (`docflow eval --stream`): what a reviewer had to do, and
how far the documents nobody looked at could be trusted, over the stream and in each half.

A document's status is the one its extraction ended in, before any review. The stream is cut in
two halves in submission order: the first holds the first floor(n / 2) documents, the second the
rest (so with an odd count the second half has one more).

- automation (per half): the share of documents that ended SUCCEEDED.
- succeeded_field_accuracy: over the labelled fields of the SUCCEEDED documents, the share that
  counts right (`counts_right`): an exact match as in `docflow eval`, or, for address-like long
  text, a similarity of at least `LONG_TEXT_SIMILARITY`.
- corrections: labelled fields a reviewer corrected (values sent in a review); reviews: the
  documents a review was posted for (every REVIEW_REQUIRED one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from docflow.evaluation.compare import TEXT_TYPES, Comparison, normalise
from docflow.extraction.definition import FieldType
from docflow.extraction.result import DocumentStatus

# Address-like long text: a free-text field whose label holds at least this many characters
# (whitespace left out). Such values differ from their label by a comma or an abbreviation that
# no reviewer would correct; a closeness of `LONG_TEXT_SIMILARITY` or more counts right.
LONG_TEXT_CHARS = 40
LONG_TEXT_SIMILARITY = 0.9


def counts_right(comparison: Comparison, kind: FieldType) -> bool:
    """Whether a labelled field counts right in the stream figures (and so is not corrected)."""
    if comparison.correct:
        return True
    if kind not in TEXT_TYPES:
        return False
    key = normalise(comparison.expected, kind)
    long_text = key is not None and len(key) >= LONG_TEXT_CHARS
    return long_text and comparison.similarity >= LONG_TEXT_SIMILARITY


@dataclass(frozen=True, slots=True)
class StreamStep:
    """One document of the stream: how its extraction ended and what the reviewer did."""

    name: str
    status: DocumentStatus
    labelled: int  # labelled fields compared
    right: int  # of those, the ones that count right (`counts_right`)
    reviewed: bool = False
    decision: str | None = None  # "approve" or "reject" when reviewed
    corrected: tuple[str, ...] = ()  # the fields the review corrected, as the API recorded them

    @property
    def corrections(self) -> int:
        return len(self.corrected)


@dataclass(frozen=True, slots=True)
class StreamFigures:
    documents: int
    succeeded: int
    failed: int
    succeeded_field_accuracy: float | None
    succeeded_field_accuracy_first_half: float | None
    succeeded_field_accuracy_second_half: float | None
    automation_first_half: float | None
    automation_second_half: float | None
    corrections: int
    corrections_first_half: int
    corrections_second_half: int
    reviews: int
    approved: int
    rejected: int


def halves(steps: Sequence[StreamStep]) -> tuple[Sequence[StreamStep], Sequence[StreamStep]]:
    """The first floor(n / 2) steps and the rest."""
    cut = len(steps) // 2
    return steps[:cut], steps[cut:]


def automation(steps: Sequence[StreamStep]) -> float | None:
    """Share of `steps` that ended SUCCEEDED; None for no step."""
    if not steps:
        return None
    return sum(s.status == DocumentStatus.SUCCEEDED for s in steps) / len(steps)


def succeeded_accuracy(steps: Sequence[StreamStep]) -> float | None:
    """Right / labelled fields of the SUCCEEDED steps; None when they hold no labelled field."""
    succeeded = [s for s in steps if s.status == DocumentStatus.SUCCEEDED]
    labelled = sum(s.labelled for s in succeeded)
    return sum(s.right for s in succeeded) / labelled if labelled else None


def stream_figures(steps: Sequence[StreamStep]) -> StreamFigures:
    first, second = halves(steps)
    return StreamFigures(
        documents=len(steps),
        succeeded=sum(s.status == DocumentStatus.SUCCEEDED for s in steps),
        failed=sum(s.status == DocumentStatus.FAILED for s in steps),
        succeeded_field_accuracy=succeeded_accuracy(steps),
        succeeded_field_accuracy_first_half=succeeded_accuracy(first),
        succeeded_field_accuracy_second_half=succeeded_accuracy(second),
        automation_first_half=automation(first),
        automation_second_half=automation(second),
        corrections=sum(s.corrections for s in steps),
        corrections_first_half=sum(s.corrections for s in first),
        corrections_second_half=sum(s.corrections for s in second),
        reviews=sum(s.reviewed for s in steps),
        approved=sum(s.decision == "approve" for s in steps),
        rejected=sum(s.decision == "reject" for s in steps),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def stream_json(figures: StreamFigures, steps: Sequence[StreamStep]) -> dict[str, Any]:
    """The `stream` object of the report: the figures, then every document in stream order."""
    shown: dict[str, Any] = {}
    for name in StreamFigures.__dataclass_fields__:
        value = getattr(figures, name)
        shown[name] = _round(value) if isinstance(value, float) else value
    shown["steps"] = [
        {
            "name": s.name,
            "status": s.status.value,
            "labelled": s.labelled,
            "right": s.right,
            "decision": s.decision,
            "corrected": list(s.corrected),
        }
        for s in steps
    ]
    return shown
