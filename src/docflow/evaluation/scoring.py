"""Per-field and overall figures from document outcomes.

For each field, over the documents where it is labelled: exact match and recall are
correct / labelled (they coincide because only labelled fields are scored; both are kept because
other tools read both), precision is correct / predicted-non-empty, similarity is the mean
closeness of the normalised values (1 for an exact match, 0 for a missing value). The
calibration figures (confidence deciles, expected calibration error, status shares) are
described in `calibration`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from docflow.evaluation.calibration import (
    Bin,
    StatusShare,
    deciles,
    expected_calibration_error,
    status_shares,
)
from docflow.evaluation.compare import Comparison
from docflow.evaluation.runner import DocumentOutcome, EvalRun
from docflow.extraction.result import DocumentStatus


@dataclass(slots=True)
class FieldTally:
    labelled: int = 0
    predicted: int = 0
    correct: int = 0
    similarity_sum: float = 0.0

    def add(self, comparison: Comparison) -> None:
        self.labelled += 1
        self.predicted += comparison.found is not None and bool(comparison.found.strip())
        self.correct += comparison.correct
        self.similarity_sum += comparison.similarity

    @property
    def exact_match(self) -> float:
        return _ratio(self.correct, self.labelled)

    @property
    def precision(self) -> float:
        return _ratio(self.correct, self.predicted)

    @property
    def recall(self) -> float:
        return _ratio(self.correct, self.labelled)

    @property
    def similarity(self) -> float:
        return self.similarity_sum / self.labelled if self.labelled else 0.0


@dataclass(frozen=True, slots=True)
class Scores:
    documents: int
    docs_per_second: float
    field_accuracy: float
    fields: dict[str, FieldTally]
    statuses: dict[str, int]
    succeeded_field_accuracy: float | None
    rejected: int
    deciles: tuple[Bin, ...] = ()
    calibration_error: float | None = None
    status_shares: tuple[StatusShare, ...] = ()


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def tally(outcomes: Iterable[DocumentOutcome], order: Sequence[str] = ()) -> dict[str, FieldTally]:
    """Per-field tallies, in workflow order (`order`) and then in order of appearance."""
    tallies: dict[str, FieldTally] = {name: FieldTally() for name in order}
    for outcome in outcomes:
        for comparison in outcome.comparisons:
            tallies.setdefault(comparison.field, FieldTally()).add(comparison)
    return {name: t for name, t in tallies.items() if t.labelled}


def field_accuracy(outcomes: Iterable[DocumentOutcome]) -> float | None:
    """Correct labelled fields / labelled fields; None when nothing is labelled."""
    comparisons = [c for o in outcomes for c in o.comparisons]
    if not comparisons:
        return None
    return sum(c.correct for c in comparisons) / len(comparisons)


def score(run: EvalRun, order: Sequence[str] = ()) -> Scores:
    """All figures of one evaluation run."""
    outcomes = run.outcomes
    statuses = Counter(o.status for o in outcomes)
    succeeded = [o for o in outcomes if o.status == DocumentStatus.SUCCEEDED]
    bins = deciles(
        (c.confidence, c.correct)
        for o in outcomes
        for c in o.comparisons
        if c.confidence is not None
    )
    per_document = [
        (o.status, len(o.comparisons), sum(c.correct for c in o.comparisons)) for o in outcomes
    ]
    return Scores(
        documents=len(outcomes),
        docs_per_second=len(outcomes) / run.wall_seconds if run.wall_seconds > 0 else 0.0,
        field_accuracy=field_accuracy(outcomes) or 0.0,
        fields=tally(outcomes, order),
        statuses={s.value: statuses.get(s, 0) for s in DocumentStatus},
        succeeded_field_accuracy=field_accuracy(succeeded),
        rejected=sum(o.rejected is not None for o in outcomes),
        deciles=bins,
        calibration_error=expected_calibration_error(bins),
        status_shares=status_shares(per_document),
    )
