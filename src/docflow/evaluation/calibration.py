"""Whether confidences behave like probabilities: decile tables, ECE and status shares.

A field's confidence is meant to be the probability that its value is right. Over the labelled
fields the engine gave a value (a field it did not find has no confidence to judge), each
confidence falls in one decile ([0, 0.1), [0.1, 0.2), ... [0.9, 1.0]); per decile we count the
fields, their mean confidence and the share that were right. The expected calibration error is
the mean, weighted by fields, of |accuracy - mean confidence| over the deciles: 0 for confidences
that are exactly as often right as they claim.

Per document status: how many documents ended in it, their share, and the accuracy of their
labelled fields (for SUCCEEDED, how far an unreviewed result can be trusted).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from docflow.extraction.result import DocumentStatus

BINS = 10


@dataclass(frozen=True, slots=True)
class Bin:
    """One confidence decile: [lower, upper) (the last one includes 1.0)."""

    lower: float
    upper: float
    fields: int
    mean_confidence: float
    accuracy: float


@dataclass(frozen=True, slots=True)
class StatusShare:
    status: DocumentStatus
    documents: int
    share: float
    field_accuracy: float | None  # None when its documents hold no labelled field


def deciles(pairs: Iterable[tuple[float, bool]]) -> tuple[Bin, ...]:
    """The non-empty deciles of (confidence, correct) pairs, lowest first."""
    sums: list[list[float]] = [[0, 0.0, 0] for _ in range(BINS)]  # count, confidence, correct
    for confidence, correct in pairs:
        index = min(BINS - 1, max(0, int(confidence * BINS)))
        sums[index][0] += 1
        sums[index][1] += confidence
        sums[index][2] += correct
    return tuple(
        Bin(i / BINS, (i + 1) / BINS, int(n), total / n, right / n)
        for i, (n, total, right) in enumerate(sums)
        if n
    )


def expected_calibration_error(bins: Sequence[Bin]) -> float | None:
    """Sum over deciles of (fields / all fields) x |accuracy - mean confidence|; None if empty."""
    fields = sum(b.fields for b in bins)
    if not fields:
        return None
    return sum(b.fields / fields * abs(b.accuracy - b.mean_confidence) for b in bins)


def status_shares(
    outcomes: Sequence[tuple[DocumentStatus, int, int]],
) -> tuple[StatusShare, ...]:
    """Each status's documents, share and field accuracy, from (status, labelled, correct) per
    document."""
    total = len(outcomes)
    shares = []
    for status in DocumentStatus:
        mine = [o for o in outcomes if o[0] == status]
        labelled = sum(o[1] for o in mine)
        accuracy = sum(o[2] for o in mine) / labelled if labelled else None
        shares.append(StatusShare(status, len(mine), len(mine) / total if total else 0.0, accuracy))
    return tuple(shares)
