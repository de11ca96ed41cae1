"""Calibration maths on hand-computed cases."""

from __future__ import annotations

import pytest

from docflow.evaluation.calibration import (
    Bin,
    deciles,
    expected_calibration_error,
    status_shares,
)
from docflow.extraction.result import DocumentStatus


def test_deciles_and_a_hand_computed_ece() -> None:
    pairs = [(1.0, True), (0.9, True), (0.9, False), (0.9, True), (0.3, False), (0.35, False)]
    bins = deciles(pairs)
    assert [(b.lower, b.fields) for b in bins] == [(0.3, 2), (0.9, 4)]  # 1.0 is in the top one
    low, high = bins
    assert low.mean_confidence == pytest.approx(0.325)
    assert low.accuracy == 0.0
    assert high.mean_confidence == pytest.approx(0.925)
    assert high.accuracy == 0.75
    # 2/6 x |0 - 0.325| + 4/6 x |0.75 - 0.925|
    assert expected_calibration_error(bins) == pytest.approx(2 / 6 * 0.325 + 4 / 6 * 0.175)


def test_perfect_calibration_has_no_error() -> None:
    pairs = [(0.75, True)] * 3 + [(0.75, False)] + [(0.05, False)] * 10
    assert expected_calibration_error(deciles(pairs)) == pytest.approx(0.05 * 10 / 14)
    assert expected_calibration_error([Bin(0.7, 0.8, 4, 0.75, 0.75)]) == 0.0
    assert expected_calibration_error(()) is None


def test_status_shares_count_every_status() -> None:
    shares = status_shares(
        [
            (DocumentStatus.SUCCEEDED, 3, 3),
            (DocumentStatus.SUCCEEDED, 2, 1),
            (DocumentStatus.FAILED, 0, 0),
        ]
    )
    by_status = {s.status: s for s in shares}
    assert by_status[DocumentStatus.SUCCEEDED].share == pytest.approx(2 / 3)
    assert by_status[DocumentStatus.SUCCEEDED].field_accuracy == pytest.approx(4 / 5)
    assert by_status[DocumentStatus.REVIEW_REQUIRED].documents == 0
    assert by_status[DocumentStatus.REVIEW_REQUIRED].field_accuracy is None
    assert by_status[DocumentStatus.FAILED].field_accuracy is None
