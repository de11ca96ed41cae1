"""The per-field estimate and the gate, without a database: the cut rule, its determinism, the
conservative start, drift, and quality-assurance sampling."""

from __future__ import annotations

import random

from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.trust.estimate import WINDOW, Example, estimate, lower_at, wilson_lower
from docflow.trust.gate import FieldCut, Gated, gate, qa_sample, sampled


def _definition(**overrides: object) -> ExtractionWorkflowDefinition:
    data: dict[str, object] = {
        "name": "Invoice",
        "fields": [
            {"name": "invoice_number"},
            {"name": "total", "type": "money"},
            {"name": "note", "required": False},
        ],
        "review_threshold": 0.8,
    }
    data.update(overrides)
    return ExtractionWorkflowDefinition.model_validate(data)


def _result(**confidences: float) -> dict[str, object]:
    return {
        "fields": {
            name: {"name": name, "value": "x", "confidence": c} for name, c in confidences.items()
        }
    }


def test_a_handful_of_right_reviews_earns_no_cut() -> None:
    found = estimate([Example(0.99, True)] * 20, target=0.98)
    assert found.cut is None and found.automation_rate == 0.0
    assert found.examples == 20 and found.correct == 20


def test_enough_right_reviews_earn_the_lowest_cut_that_reaches_the_target() -> None:
    examples = [Example(0.4, False)] * 10 + [Example(0.9, True)] * 100
    found = estimate(examples, target=0.98)
    assert found.cut == 0.9
    assert found.precision == 1.0
    assert found.lower_bound is not None and found.lower_bound >= 0.98
    assert round(found.automation_rate, 3) == round(100 / 110, 3)
    # Shrunk toward the global calibration: the same evidence at a lower claimed confidence
    # needs more examples.
    assert estimate([Example(0.5, True)] * 70, target=0.98).cut is None
    assert estimate([Example(0.99, True)] * 70, target=0.98).cut == 0.99


def test_the_same_examples_give_the_same_cut_in_any_order() -> None:
    rng = random.Random(7)
    examples = [Example(c := rng.random(), rng.random() < c**0.2) for _ in range(400)]
    first = estimate(sorted(examples, key=lambda e: e.confidence), target=0.9)
    again = estimate(sorted(examples, key=lambda e: -e.confidence), target=0.9)
    assert first == again and first.cut is not None


def test_a_lower_target_earns_trust_sooner() -> None:
    examples = [Example(0.95, True)] * 30
    assert estimate(examples, target=0.98).cut is None
    assert estimate(examples, target=0.9).cut == 0.95


def test_recent_wrong_values_pull_the_precision_at_the_cut_under_the_target() -> None:
    trusted = [Example(0.95, True)] * 150
    assert estimate(trusted, target=0.98).cut == 0.95
    drifted = trusted + [Example(0.95, False)] * 10
    lower = lower_at(drifted, 0.95)
    assert lower is not None and lower < 0.98
    assert estimate(drifted, target=0.98).cut is None
    # Only the most recent WINDOW examples count.
    recovered = drifted + [Example(0.95, True)] * WINDOW
    assert estimate(recovered, target=0.98).cut == 0.95


def test_wilson_lower_bound() -> None:
    assert wilson_lower(0, 0) == 0.0
    assert 0.97 < wilson_lower(100, 100) < 0.995
    assert wilson_lower(50, 100) < 0.5


def test_a_field_without_a_cut_goes_to_review_by_default() -> None:
    definition = _definition()
    result = _result(invoice_number=0.99, total=0.99)
    gated = gate(definition, result, "SUCCEEDED", (), {})
    assert gated.status == "REVIEW_REQUIRED"
    assert any(r.startswith("invoice_number: not yet trusted") for r in gated.reasons)


def test_thresholds_cold_start_decides_unmeasured_fields_as_before() -> None:
    definition = _definition(cold_start="thresholds")
    assert gate(definition, _result(invoice_number=0.99, total=0.9), "SUCCEEDED", (), {}) == Gated(
        "SUCCEEDED", ()
    )
    held = gate(definition, _result(invoice_number=0.99, total=0.7), "REVIEW_REQUIRED", (), {})
    assert held.status == "REVIEW_REQUIRED"
    # Measured (enough examples) and never reaching the target: review, also in this mode.
    cuts = {"total": FieldCut(None, 40)}
    measured = gate(definition, _result(invoice_number=0.99, total=0.99), "SUCCEEDED", (), cuts)
    assert measured.status == "REVIEW_REQUIRED"


def test_earned_cuts_pass_and_hold_fields_whatever_review_threshold_says() -> None:
    definition = _definition()
    cuts = {
        "invoice_number": FieldCut(0.6, 80),
        "total": FieldCut(0.95, 80),
        "note": FieldCut(0.5, 80),
    }
    # total at 0.7 would need review by the static threshold; its earned cut passes 0.6.
    passed = gate(
        definition,
        _result(invoice_number=0.7, total=0.96, note=0.9),
        "REVIEW_REQUIRED",
        (),
        cuts,
    )
    assert passed == Gated("SUCCEEDED", ())
    held = gate(definition, _result(invoice_number=0.99, total=0.9), "SUCCEEDED", (), cuts)
    assert held.status == "REVIEW_REQUIRED"
    assert held.reasons == ("total: confidence 0.9000 below its earned cut 0.9500",)
    # Shown cut toward each other: a confidence just under its cut never reads as equal to it.
    close = {**cuts, "total": FieldCut(0.97411, 80)}
    near = gate(definition, _result(invoice_number=0.99, total=0.97409), "SUCCEEDED", (), close)
    assert near.reasons == ("total: confidence 0.9740 below its earned cut 0.9742",)
    # A FAILED document stays FAILED; a missing required value stays in review.
    assert gate(definition, _result(), "FAILED", ("x",), cuts) == Gated("FAILED", ("x",))
    missing = gate(definition, _result(total=0.99), "REVIEW_REQUIRED", (), cuts)
    assert missing.reasons == ("invoice_number: required field not found",)


def test_qa_sampling_sends_the_drawn_share_of_succeeded_documents_to_review() -> None:
    ids = [f"doc_{i:05d}" for i in range(4000)]
    share = sum(sampled(i, 0.05) for i in ids) / len(ids)
    assert 0.035 < share < 0.065
    assert not any(sampled(i, 0.0) for i in ids) and all(sampled(i, 1.0) for i in ids)
    definition = _definition(qa_sample_rate=1.0)
    gated = qa_sample(definition, Gated("SUCCEEDED", ()), "doc_1")
    assert gated.qa_sample and gated.status == "REVIEW_REQUIRED"
    assert gated.reasons == ("quality-assurance sample (qa_sample_rate 1)",)
    assert qa_sample(definition, Gated("REVIEW_REQUIRED", ("r",)), "doc_1").qa_sample is False


def test_the_keys_default_and_stay_out_of_the_stored_definition_at_their_defaults() -> None:
    definition = _definition()
    assert definition.target_precision == 0.98 and definition.qa_sample_rate == 0.0
    assert definition.cold_start == "review"
    dumped = definition.model_dump(mode="json")
    assert not {"target_precision", "qa_sample_rate", "cold_start"} & set(dumped)
    custom = _definition(target_precision=0.95, qa_sample_rate=0.05, cold_start="thresholds")
    assert {"target_precision", "qa_sample_rate", "cold_start"} <= set(
        custom.model_dump(mode="json")
    )


def test_a_value_only_a_language_model_read_holds_the_document_whatever_its_field_earned() -> None:
    definition = _definition()
    cuts = {"invoice_number": FieldCut(0.6, 80), "total": FieldCut(0.6, 80)}
    result = _result(invoice_number=0.9, total=0.79)
    result["fields"]["total"]["needs_review"] = True  # type: ignore[index]
    held = gate(definition, result, "REVIEW_REQUIRED", (), cuts)
    assert held.status == "REVIEW_REQUIRED"
    assert held.reasons == (
        "total: a language model's value the engine did not read, held for review",
    )
