"""The figures of a stream evaluation, from hand-made steps: halves, automation, corrections,
the accuracy of SUCCEEDED documents and the long-text rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from docflow.evaluation.compare import compare_value
from docflow.evaluation.embedded import service_environment
from docflow.evaluation.stream import workflow_body
from docflow.evaluation.stream_scoring import (
    StreamStep,
    counts_right,
    halves,
    stream_figures,
    stream_json,
)
from docflow.extraction.definition import FieldType
from docflow.extraction.result import DocumentStatus
from docflow.extraction.workflow_file import load_workflow_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OK, REVIEW, FAILED = (
    DocumentStatus.SUCCEEDED,
    DocumentStatus.REVIEW_REQUIRED,
    DocumentStatus.FAILED,
)


def _reviewed(name: str, right: int, corrected: tuple[str, ...]) -> StreamStep:
    return StreamStep(name, REVIEW, 4, right, True, "approve", corrected)


STEPS = (
    _reviewed("a", 2, ("total", "date")),
    StreamStep("b", OK, 4, 3),
    _reviewed("c", 3, ("company",)),
    StreamStep("d", OK, 4, 4),
    StreamStep("e", OK, 2, 2),
    StreamStep("f", FAILED, 4, 0),
    StreamStep("g", OK, 4, 4),
)


def test_the_first_half_holds_floor_n_over_two_documents() -> None:
    first, second = halves(STEPS)
    assert [s.name for s in first] == ["a", "b", "c"]
    assert [s.name for s in second] == ["d", "e", "f", "g"]
    assert halves(()) == ((), ())


def test_figures_per_half() -> None:
    figures = stream_figures(STEPS)
    assert (figures.documents, figures.succeeded, figures.failed) == (7, 4, 1)
    assert figures.automation_first_half == pytest.approx(1 / 3)
    assert figures.automation_second_half == pytest.approx(3 / 4)
    # fields of SUCCEEDED documents only: b 3/4, d 4/4, e 2/2, g 4/4
    assert figures.succeeded_field_accuracy == pytest.approx(13 / 14)
    assert figures.succeeded_field_accuracy_first_half == pytest.approx(3 / 4)
    assert figures.succeeded_field_accuracy_second_half == pytest.approx(1.0)
    assert (figures.corrections, figures.corrections_first_half) == (3, 3)
    assert figures.corrections_second_half == 0
    assert (figures.reviews, figures.approved, figures.rejected) == (2, 2, 0)


def test_a_stream_without_succeeded_documents_has_no_succeeded_accuracy() -> None:
    figures = stream_figures([_reviewed("a", 4, ())])
    assert figures.succeeded_field_accuracy is None
    assert figures.automation_first_half is None  # an empty half
    assert figures.automation_second_half == 0.0


def test_the_json_names_every_figure_of_the_contract() -> None:
    shown = stream_json(stream_figures(STEPS), STEPS)
    contract = {
        "documents",
        "succeeded",
        "succeeded_field_accuracy",
        "succeeded_field_accuracy_first_half",
        "succeeded_field_accuracy_second_half",
        "automation_first_half",
        "automation_second_half",
        "corrections",
        "corrections_first_half",
        "corrections_second_half",
        "reviews",
    }
    assert contract <= set(shown)
    assert shown["succeeded_field_accuracy"] == round(13 / 14, 4)
    assert shown["steps"][0] == {
        "name": "a",
        "status": "REVIEW_REQUIRED",
        "labelled": 4,
        "right": 2,
        "decision": "approve",
        "corrected": ["total", "date"],
    }


ADDRESS = "NO. 53, JALAN BESAR, TAMAN SRI PULAI, 81300 SKUDAI, JOHOR"


def test_long_text_close_to_its_label_counts_right() -> None:
    near = compare_value("address", FieldType.STRING, ADDRESS, ADDRESS.replace(",", ""))
    assert not near.correct and near.similarity >= 0.9
    assert counts_right(near, FieldType.STRING)
    far = compare_value("address", FieldType.STRING, ADDRESS, "81300 SKUDAI")
    assert not counts_right(far, FieldType.STRING)


def test_short_text_and_amounts_must_match_exactly() -> None:
    name = compare_value("company", FieldType.STRING, "KEDAI BUKU SRI", "KEDAI BUKU SRl")
    assert name.similarity >= 0.9 and not counts_right(name, FieldType.STRING)
    total = compare_value("total", FieldType.MONEY, "1234567.00", "1234568.00")
    assert not counts_right(total, FieldType.MONEY)


def test_the_qa_sample_rate_is_written_into_the_workflow_body() -> None:
    definition = load_workflow_file(EXAMPLES / "receipt.yaml")
    assert "qa_sample_rate" not in workflow_body(definition)
    body = workflow_body(definition, qa_sample_rate=0.05)
    assert body["qa_sample_rate"] == 0.05
    assert body["name"] == "receipt" and body["review_threshold"] == 0.8


def test_the_service_gets_none_of_the_callers_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", "postgresql://elsewhere/db")
    monkeypatch.setenv("DOCFLOW_LEARNING", "true")
    env = service_environment(tmp_path, 8123, {"DOCFLOW_LEARNING": "false"})
    assert "DOCFLOW_DATABASE_URL" not in env
    assert env["DOCFLOW_LEARNING"] == "false"
    assert (env["DOCFLOW_HOME"], env["DOCFLOW_PORT"]) == (str(tmp_path), "8123")
    assert env["DOCFLOW_HOST"] == "127.0.0.1"
