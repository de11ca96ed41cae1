"""Combining candidates, field confidence, document confidence and status."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef
from docflow.extraction.fields.candidates import Candidate
from docflow.extraction.fields.combine import choose, field_result
from docflow.extraction.fields.confidence import (
    Scored,
    Signals,
    consensus,
    decide_status,
    document_confidence,
    field_confidence,
    ocr_confidence,
    shown_below,
)
from docflow.extraction.model import DocumentKind, Page, ReadDocument, Rect, TextSource
from docflow.extraction.pipeline import extract_fields
from docflow.extraction.result import DocumentStatus, FieldResult

PageMaker = Callable[..., Page]


def cand(
    value: str | None, score: float, locator: str, *, conf: float = 1.0, y: float = 0.1
) -> Candidate:
    return Candidate(
        value=value,
        raw=value or "??",
        score=score,
        locator=locator,
        page=1,
        box=Rect(0.1, y, 0.2, y + 0.02),
        word_confidences=(conf,),
        error=None if value else "not an amount: '??'",
    )


def combine(name: str, candidates: list[Candidate], **cross_checks: Any) -> FieldResult:
    """The combine and confidence stages for one field."""
    return field_result(choose(name, candidates, **cross_checks))


def test_agreeing_locators_raise_confidence_and_are_named() -> None:
    alone = combine("total", [cand("10.00", 0.85, "label")])
    agreed = combine("total", [cand("10.00", 0.85, "label"), cand("10.00", 0.9, "pattern")])
    assert agreed.locator == "label+pattern"
    assert agreed.confidence > alone.confidence > 0.5


def test_disagreement_lowers_confidence_and_the_best_supported_value_wins() -> None:
    result = combine(
        "total",
        [cand("10.00", 1.0, "label"), cand("10.00", 0.9, "region"), cand("12.00", 1.0, "pattern")],
    )
    assert result.value == "10.00"
    assert result.locator == "region+label"
    unopposed = combine("total", [cand("10.00", 1.0, "label"), cand("10.00", 0.9, "region")])
    assert 0.5 < result.confidence < unopposed.confidence
    tied = combine("total", [cand("10.00", 1.0, "label"), cand("12.00", 1.0, "pattern")])
    assert tied.confidence < combine("total", [cand("10.00", 1.0, "label")]).confidence


def test_one_locator_repeating_a_value_does_not_count_twice() -> None:
    repeated = combine("t", [cand("1.00", 0.9, "pattern"), cand("1.00", 0.9, "pattern")])
    assert repeated.confidence == combine("t", [cand("1.00", 0.9, "pattern")]).confidence


def test_weak_rival_costs_nothing() -> None:
    result = combine("t", [cand("10.00", 1.0, "label"), cand("3.00", 0.5, "label")])
    alone = combine("t", [cand("10.00", 1.0, "label")])
    assert (result.value, result.confidence) == ("10.00", alone.confidence)


def test_grand_total_prefers_the_largest_of_the_strong_amounts() -> None:
    found = [
        cand("120.00", 1.0, "label"),
        cand("120.00", 0.9, "pattern"),  # "Total: 120.00" of a tax summary
        cand("127.20", 1.0, "label"),  # "Total (incl. tax): 127.20"
        cand("900.00", 0.5, "label"),  # "Total Qty 900": too weak to take part
    ]
    total = combine("total", found, grand_total=True)
    assert total.value == "127.20"
    unopposed = combine("total", [found[2]], grand_total=True)
    assert total.confidence < unopposed.confidence  # the strong smaller amount is still a rival
    assert combine("total", found).value == "120.00"


def test_grand_total_after_cash_rounding_is_the_one_printed_last() -> None:
    found = [
        cand("27.27", 1.0, "label", y=0.6),  # Total Incl. GST
        cand("27.27", 0.9, "pattern", y=0.6),
        cand("27.25", 0.85, "label", y=0.65),  # Total Rounded, under "Rounding -0.02"
    ]
    assert combine("total", found, grand_total=True).value == "27.25"


def test_valid_value_beats_a_stronger_invalid_one() -> None:
    result = combine("t", [cand(None, 1.0, "region"), cand("5.00", 0.3, "label")])
    assert result.value == "5.00" and not result.errors


def test_invalid_value_is_capped_and_carries_its_error() -> None:
    result = combine("t", [cand(None, 1.0, "region")])
    assert result.value is None and result.raw == "??"
    assert result.confidence <= 0.2
    assert result.errors == ("not an amount: '??'",)


def test_no_candidates_is_not_found() -> None:
    result = combine("t", [])
    assert (result.value, result.confidence, result.errors) == (None, 0.0, ("not found",))


def test_ocr_confidence_weighs_the_worst_word() -> None:
    assert ocr_confidence([1.0, 1.0]) == 1.0
    assert ocr_confidence([0.9, 0.5]) == pytest.approx(0.6)
    assert ocr_confidence([]) == 0.0
    low = combine("t", [cand("1.00", 1.0, "label", conf=0.6)])
    assert low.confidence < combine("t", [cand("1.00", 1.0, "label")]).confidence


def test_consensus_ramps_rivals_in_between_70_and_100_percent() -> None:
    assert consensus(1.0, []) == 1.0
    assert consensus(1.0, [0.7]) == 1.0
    assert consensus(1.0, [1.0]) == pytest.approx(0.75)
    assert 0.75 < consensus(1.0, [0.85]) < 1.0


SURE = Signals(ocr=1.0, locator=1.0, kinds=1, consensus=1.0, valid=True, kind="amount")


def test_field_confidence_is_the_logistic_of_the_weighted_features() -> None:
    half = replace(SURE, ocr=0.5)
    assert field_confidence(half, {"intercept": -1.0, "ocr": 2.0}) == pytest.approx(0.5)
    # z = -1 + 2 x 1.0 + 1 x (locator 1.0) = 2
    weights = {"intercept": -1.0, "ocr": 2.0, "locator": 1.0}
    assert field_confidence(SURE, weights) == pytest.approx(1 / (1 + math.exp(-2)))
    assert 0.9 < field_confidence(SURE) < 1.0  # the fitted coefficients


def test_field_confidence_validation_cap() -> None:
    assert field_confidence(replace(SURE, valid=False)) == 0.2


def test_the_evidence_behind_a_value_raises_its_confidence() -> None:
    base = field_confidence(SURE)
    assert field_confidence(replace(SURE, cross_check=True)) > base
    assert field_confidence(replace(SURE, kinds=2)) > base
    assert field_confidence(replace(SURE, position_only=True)) < base
    assert field_confidence(replace(SURE, consensus=0.75)) < base


def test_document_confidence_is_the_weakest_required_field() -> None:
    fields = [
        Scored("a", True, 0.95, True),
        Scored("b", True, 0.7, True),
        Scored("c", False, 0.1, True),
    ]
    assert document_confidence(fields) == 0.7
    assert document_confidence([*fields, Scored("d", True, 0.9, False)]) == 0.0
    optional = [Scored("o", False, 0.6, True), Scored("p", False, 0.0, False)]
    assert document_confidence(optional) == 0.6
    assert document_confidence([]) == 1.0


DEFINITION = ExtractionWorkflowDefinition(
    name="t",
    fields=[FieldDef(name="total", type="money"), FieldDef(name="note", required=False)],
    confidence_threshold=0.5,
    review_threshold=0.8,
)


@pytest.mark.parametrize(
    ("confidence", "status"),
    [
        (0.8, DocumentStatus.SUCCEEDED),
        (0.95, DocumentStatus.SUCCEEDED),
        (0.79, DocumentStatus.REVIEW_REQUIRED),
        (0.5, DocumentStatus.REVIEW_REQUIRED),
        (0.49, DocumentStatus.FAILED),
    ],
)
def test_status_thresholds(confidence: float, status: DocumentStatus) -> None:
    fields = [Scored("total", True, confidence, True), Scored("note", False, 0.0, False)]
    decided, value, reasons = decide_status(fields, DEFINITION)
    assert (decided, value) == (status, confidence)
    assert bool(reasons) == (status != DocumentStatus.SUCCEEDED)
    assert all(r.startswith("total:") for r in reasons)


def test_reasons_name_missing_and_weak_required_fields() -> None:
    definition = ExtractionWorkflowDefinition(
        name="t", fields=[FieldDef(name=n) for n in ("a", "b", "c")]
    )
    fields = [
        Scored("a", True, 0.9, True),
        Scored("b", True, 0.6, True, ("not a date: 'x'",)),
        Scored("c", True, 0.0, False),
    ]
    status, _, reasons = decide_status(fields, definition)
    assert status == DocumentStatus.FAILED
    assert reasons == (
        "b: confidence 0.60 below 0.80; not a date: 'x'",
        "c: required field not found",
    )


def document(page: Page) -> ReadDocument:
    return ReadDocument(DocumentKind.PDF, (page,))


def test_status_end_to_end_from_pages(page: PageMaker) -> None:
    label: dict[str, Any] = {"kind": "label", "labels": ["Total"]}
    definition = ExtractionWorkflowDefinition(
        name="t",
        fields=[
            FieldDef(name="total", type="money", locators=[label]),
            FieldDef(name="note", required=False, locators=[{"kind": "pattern", "pattern": "zz"}]),
        ],
    )
    good = extract_fields(document(page(["Total 10.00"])), definition)
    expected = field_confidence(SURE)  # one exact label, text layer, no rival
    assert (good.status, good.reasons) == (DocumentStatus.SUCCEEDED, ())
    assert good.confidence == pytest.approx(expected, abs=1e-4)
    assert good.fields["note"].value is None  # optional and missing: no effect
    faint = page(["Total 10.00", "Total 12.00"], source=TextSource.OCR, confidence=0.6)
    unsure = extract_fields(document(faint), definition)
    assert unsure.status == DocumentStatus.REVIEW_REQUIRED
    (reason,) = unsure.reasons
    assert reason.startswith("total: confidence ") and reason.endswith(" below 0.80")
    missing = extract_fields(document(page(["Nothing to see"])), definition)
    assert missing.status == DocumentStatus.FAILED
    assert missing.reasons == ("total: required field not found",)
    assert missing.text_source == "text_layer" and missing.page_count == 1
    assert set(missing.timings_ms) >= {"layout", "locate", "combine", "line_items", "status"}


def test_a_reason_never_shows_the_confidence_at_or_above_its_threshold() -> None:
    # 0.9877 rounded to two decimals read "0.99 below 0.99".
    definition = ExtractionWorkflowDefinition(
        name="t", fields=[FieldDef(name="invoice_date")], review_threshold=0.99
    )
    _, _, reasons = decide_status([Scored("invoice_date", True, 0.9877, True)], definition)
    assert reasons == ("invoice_date: confidence 0.98 below 0.99",)
    assert shown_below(0.9877, 0.99) == "0.98 below 0.99"
    assert shown_below(0.994, 0.995) == "0.99 below 0.995"
    assert shown_below(0.6, 0.8) == "0.60 below 0.80"


@given(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_shown_confidence_is_below_the_shown_threshold(confidence: float, threshold: float) -> None:
    assume(confidence < threshold)
    shown, limit = shown_below(confidence, threshold).split(" below ")
    assert Decimal(shown) < Decimal(limit)
    assert Decimal(limit) == Decimal(repr(threshold))
