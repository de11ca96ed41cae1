"""How far a field's values can be trusted on one workflow version, from its reviewed examples.

An example is (the confidence the engine gave the value, whether the reviewer left it as it
was). For a candidate cut `t` the examples at or above it are the values that would pass
without review; their precision is estimated as

    (right + PRIOR_WEIGHT x prior) / (examples + PRIOR_WEIGHT)

where `prior` is their mean confidence: the global calibration (a confidence is meant to be
the probability the value is right) counts as PRIOR_WEIGHT pseudo-examples, so a handful of
reviews cannot move the estimate far, and this tenant's examples outweigh it as they grow.
The cut is the lowest example confidence whose Wilson lower bound (z = Z) of that estimate
reaches the target precision; None when none does (the field goes to review). Only the
WINDOW most recent examples count, so a drift (recent values wrong more often) moves the cut.
Pure and deterministic: the same examples give the same estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PRIOR_WEIGHT = 4.0
Z = 1.0  # one-sided, about 84%: with every example right, about 50 reach a 0.98 target
WINDOW = 500
# Under `cold_start: thresholds`, the examples a field needs before its estimate decides.
COLD_START_EXAMPLES = 10


@dataclass(frozen=True, slots=True)
class Example:
    confidence: float
    correct: bool


@dataclass(frozen=True, slots=True)
class Estimate:
    """A field's measured trust: its examples (and how many were right), the cut (None: no
    confidence reaches the target), the raw precision of the examples at or above the cut,
    its conservative lower bound, and the automation rate (the share of examples at or above
    the cut: how many values would pass without review)."""

    examples: int
    correct: int
    cut: float | None
    precision: float | None
    lower_bound: float | None
    automation_rate: float


def wilson_lower(successes: float, trials: float, z: float = Z) -> float:
    """The Wilson score lower bound of a proportion (0 with no trials)."""
    if trials <= 0:
        return 0.0
    p = min(1.0, max(0.0, successes / trials))
    z2 = z * z
    centre = p + z2 / (2 * trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    return max(0.0, (centre - spread) / (1 + z2 / trials))


def shrunk_lower(right: int, total: int, confidence_sum: float) -> float:
    """The lower bound of the precision of `total` examples (`right` of them right, their
    confidences summing to `confidence_sum`), shrunk toward their mean confidence."""
    if total == 0:
        return 0.0
    prior = confidence_sum / total
    return wilson_lower(right + PRIOR_WEIGHT * prior, total + PRIOR_WEIGHT)


def estimate(examples: Sequence[Example], *, target: float) -> Estimate:
    """The field's estimate from its examples (most recent last; only the last WINDOW count)."""
    window = list(examples)[-WINDOW:]
    ranked = sorted(window, key=lambda e: (-e.confidence, not e.correct))
    right = total = 0
    confidence_sum = 0.0
    best: tuple[float, int, int] | None = None  # cut, examples above, right above
    for index, example in enumerate(ranked):
        total += 1
        right += example.correct
        confidence_sum += example.confidence
        tied = index + 1 < len(ranked) and ranked[index + 1].confidence == example.confidence
        if tied:  # a cut takes every example at its confidence
            continue
        if shrunk_lower(right, total, confidence_sum) >= target:
            best = (example.confidence, total, right)
    correct = sum(e.correct for e in window)
    if best is None:
        return Estimate(len(window), correct, None, None, None, 0.0)
    cut, above, right_above = best
    confidences = sum(e.confidence for e in ranked[:above])
    return Estimate(
        examples=len(window),
        correct=correct,
        cut=cut,
        precision=right_above / above,
        lower_bound=shrunk_lower(right_above, above, confidences),
        automation_rate=above / len(window),
    )


def lower_at(examples: Sequence[Example], cut: float) -> float | None:
    """The lower bound of the precision of the (windowed) examples at or above `cut`; None
    when there are none."""
    above = [e for e in list(examples)[-WINDOW:] if e.confidence >= cut]
    if not above:
        return None
    return shrunk_lower(sum(e.correct for e in above), len(above), sum(e.confidence for e in above))
