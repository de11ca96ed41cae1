"""The pure parts of the gap-fill: which fields are asked for, which lines go with them,
grounding of the answers (OCR-tolerant), their provenance and the status afterwards."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.support.timing import within

from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.model import DocumentKind, Page, ReadDocument, Rect, TextSource, Word
from docflow.llm.context import EXTRACT, VERIFY, Gap, Line, gap_request, tokens, weak_fields
from docflow.llm.gapfill import tasks
from docflow.llm.grounding import Source, apply_answer, dropped_notes, ground, rescore
from docflow.llm.prompt import build

DEFINITION = ExtractionWorkflowDefinition.model_validate(
    {
        "name": "invoices",
        "profiles": [],
        "complexity_tier": "complex",
        "fields": [
            {"name": "invoice_number", "locators": [{"kind": "label", "labels": ["Invoice No"]}]},
            {
                "name": "total",
                "type": "money",
                "locators": [{"kind": "label", "labels": ["Total"]}],
            },
            {"name": "issue_date", "type": "date", "complexity_tier": "simple"},
        ],
        "confidence_threshold": 0.4,
        "review_threshold": 0.8,
    }
)


def _page(rows: list[str]) -> ReadDocument:
    words = []
    for line, text in enumerate(rows):
        y = 0.02 + line * 0.03
        x = 0.05
        for token in text.split():
            width = 0.012 * len(token)
            words.append(Word(token, Rect(x, y, x + width, y + 0.02), 0.9, line, 0))
            x += width + 0.01
    page = Page(1, 1000, 1400, TextSource.OCR, tuple(words))
    return ReadDocument(DocumentKind.PNG, (page,))


def _field(value: str | None, confidence: float) -> dict[str, Any]:
    return {"value": value, "raw": value, "confidence": confidence, "page": None, "box": None}


def test_only_missing_and_weak_fields_are_asked_each_with_its_tier() -> None:
    fields = {
        "invoice_number": _field("INV-9", 0.95),
        "total": _field("55.10", 0.6),
        "issue_date": _field(None, 0.0),
    }
    gaps = weak_fields(DEFINITION, fields)
    assert gaps == [
        Gap("total", VERIFY, "55.10", "complex"),
        Gap("issue_date", EXTRACT, None, "simple"),
    ]
    # one call per task: extraction at its fields' tier, verification one tier cheaper
    assert [(t, tier, [g.name for g in g_]) for t, tier, g_ in tasks(gaps)] == [
        ("extract", "simple", ["issue_date"]),
        ("verify", "standard", ["total"]),
    ]


def test_the_lines_sent_are_those_around_labels_and_candidates_within_the_budget() -> None:
    rows = [f"filler line number {i} with words" for i in range(200)]
    rows[50] = "Invoice No INV-9"
    rows[120] = "Issued on 12/03/2024"
    rows[180] = "Total 55.10"
    fields = {
        "invoice_number": _field("INV-9", 0.95),
        "total": _field(None, 0.0),
        "issue_date": _field(None, 0.0),
    }
    request = gap_request(_page(rows), DEFINITION, fields, budget_tokens=1000)
    assert request is not None
    # the date printed, the total's label and the row under it; a sure field brings no lines
    texts = [line.text for line in request.lines]
    assert texts == ["Issued on 12/03/2024", "Total 55.10", "filler line number 181 with words"]
    assert request.context_tokens < 0.1 * request.full_tokens
    tight = gap_request(
        _page(rows), DEFINITION, fields, budget_tokens=tokens("Issued on 12/03/2024") + 1
    )
    assert tight is not None and [line.text for line in tight.lines] == ["Issued on 12/03/2024"]


def test_every_field_sure_asks_nothing() -> None:
    fields = {name: _field("x", 0.99) for name in ("invoice_number", "total", "issue_date")}
    assert gap_request(_page(["x"]), DEFINITION, fields, budget_tokens=100) is None


def test_the_prefix_is_the_same_for_every_document_of_a_workflow() -> None:
    one = build(DEFINITION, [Gap("total", EXTRACT, None, "simple")], [Line(1, "a", (0, 0, 1, 1))])
    two = build(DEFINITION, [Gap("issue_date", EXTRACT, None, "simple")], [])
    assert one.prefix == two.prefix and one.request != two.request
    assert list(one.schema["properties"]) == ["total"]
    assert one.schema["additionalProperties"] is False


LINES = (
    Line(1, "T0TAL RM 55.1O", (0.1, 0.5, 0.4, 0.52), 0.9),
    Line(1, "NO. 53, JALAN BESAR,", (0.1, 0.1, 0.5, 0.12), 0.9),
    Line(1, "45600 BATANG BERJUNTAI", (0.1, 0.13, 0.5, 0.15), 0.9),
    Line(1, "CASH RM 60.00", (0.1, 0.55, 0.4, 0.57), 0.9),
)
SOURCE = Source("openai", "m", "simple", "extract")


def test_grounding_tolerates_ocr_errors_and_spans_lines() -> None:
    assert ground("55.10", LINES)[0] >= 90  # "55.1O" as OCR read it
    score, window = ground("NO. 53, JALAN BESAR, 45600 BATANG BERJUNTAI", LINES)
    assert score >= 90 and len(window) == 2
    assert ground("INV-12345", LINES)[0] < 90


def test_a_model_only_value_is_held_for_review_and_an_invented_one_is_dropped() -> None:
    fields = {"invoice_number": _field("INV-9", 0.95), "total": _field(None, 0.0)}
    fields["issue_date"] = _field(None, 0.0)
    gaps = [Gap("total", EXTRACT, None, "simple"), Gap("issue_date", EXTRACT, None, "simple")]
    out = apply_answer(
        fields, DEFINITION, gaps, {"total": "55.10", "issue_date": "01/01/2030"}, LINES, SOURCE
    )
    total, date = out["total"], out["issue_date"]
    assert total["value"] == "55.10" and total["reading"] == "llm" and total["needs_review"]
    # the engine's calibration of one more reading, capped under review_threshold (0.8)
    assert total["llm"]["calibrated"] > 0.8 and total["confidence"] == 0.79
    assert total["box"] == {"x0": 0.1, "y0": 0.5, "x1": 0.4, "y1": 0.52}
    assert total["llm"]["grounded"] and total["llm"]["tier"] == "simple"
    # not in the text: dropped, the field as the engine left it, the answer kept nowhere
    assert date["value"] is None and date["llm"]["dropped"] == "not found in the document's text"
    assert "2030" not in repr(date)
    assert dropped_notes(out, gaps) == [
        "llm_dropped: issue_date: the model's answer was dropped (not found in the document's text)"
    ]
    status, _confidence, reasons = rescore({"fields": out}, DEFINITION)
    assert status == "FAILED"  # a required field is still missing, as the engine left it
    assert reasons == (
        "total: confidence 0.79 below 0.80",
        "issue_date: required field not found",
    )


def test_a_model_only_value_of_an_optional_field_holds_the_document() -> None:
    definition = DEFINITION.model_copy(
        update={
            "fields": [
                DEFINITION.fields[0],
                DEFINITION.fields[1].model_copy(update={"required": False}),
            ]
        }
    )
    fields = {"invoice_number": _field("INV-9", 0.95), "total": _field(None, 0.0)}
    assert rescore({"fields": fields}, definition)[0] == "SUCCEEDED"
    gaps = [Gap("total", EXTRACT, None, "simple")]
    out = apply_answer(fields, definition, gaps, {"total": "55.10"}, LINES, SOURCE)
    status, confidence, reasons = rescore({"fields": out}, definition)
    assert status == "REVIEW_REQUIRED" and confidence == 0.79
    assert reasons == (
        "total: a language model's value the engine did not read (confidence 0.79), "
        "held for review",
    )
    # a value read from badly read words: its own low confidence, the document still in review
    blurred = tuple(replace(line, confidence=0.1) for line in LINES)
    low = apply_answer(fields, definition, gaps, {"total": "55.10"}, blurred, SOURCE)
    assert low["total"]["confidence"] < definition.confidence_threshold
    assert rescore({"fields": low}, definition)[:2] == ("REVIEW_REQUIRED", 0.4)
    # the hook for the tenant's reviews: a value they back keeps its calibrated confidence
    vouched = apply_answer(
        fields, definition, gaps, {"total": "55.10"}, LINES, SOURCE, vouched=lambda n, v: True
    )
    assert "needs_review" not in vouched["total"] and vouched["total"]["confidence"] > 0.8
    assert rescore({"fields": vouched}, definition)[0] == "SUCCEEDED"


def test_a_grounded_disagreement_corrects_a_doubted_value_for_review() -> None:
    fields = {"invoice_number": _field("INV-9", 0.95), "total": _field("55.10", 0.7)}
    fields["issue_date"] = _field("2024-03-12", 0.95)
    gaps = [Gap("total", VERIFY, "55.10", "simple")]
    out = apply_answer(fields, DEFINITION, gaps, {"total": "RM 60.00"}, LINES, SOURCE)
    total = out["total"]
    assert total["value"] == "60.00" and total["needs_review"] and total["confidence"] <= 0.79
    assert total["alternative"]["value"] == "55.10"
    assert total["alternative"]["confidence"] == 0.7
    assert rescore({"fields": out}, DEFINITION)[0] == "REVIEW_REQUIRED"
    for answer in ("99.99", "NO. 53, JALAN BESAR,"):  # not in the text; in it, not money
        out = apply_answer(fields, DEFINITION, gaps, {"total": answer}, LINES, SOURCE)
        assert {k: v for k, v in out["total"].items() if k != "llm"} == fields["total"]
        assert out["total"]["llm"]["dropped"] and answer not in repr(out["total"])
    confirmed = apply_answer(fields, DEFINITION, gaps, {"total": "55.10"}, LINES, SOURCE)
    assert confirmed["total"]["confidence"] == 0.9 and confirmed["total"]["locator"] == "llm"
    assert "needs_review" not in confirmed["total"]


def test_a_confident_engine_value_is_never_overridden() -> None:
    fields = {"total": _field("55.10", 0.85)}
    gaps = [Gap("total", VERIFY, "55.10", "simple")]
    out = apply_answer(fields, DEFINITION, gaps, {"total": "60.00"}, LINES, SOURCE)
    assert out["total"]["value"] == "55.10" and out["total"]["confidence"] == 0.85
    assert "review_threshold" in out["total"]["llm"]["dropped"]


def test_the_context_of_a_long_document_with_every_label_is_bounded() -> None:
    """The worst a definition can ask (500 labels, 100 weak fields, half of them dates) on a
    long OCR document: label lookups tolerate OCR errors on the first pages only, so choosing
    the lines stays well under a second where the engine itself takes several."""
    pages = []
    for n in range(1, 21):
        words = []
        for line in range(60):
            y, x = 0.01 + line * 0.015, 0.05
            for (
                token
            ) in f"Label{line % 37} value {n}-{line} amount 12.{line:02d} 01/02/2024".split():
                width = 0.01 * len(token)
                words.append(Word(token, Rect(x, y, x + width, y + 0.01), 0.9, line, 0))
                x += width + 0.005
        pages.append(Page(n, 1000, 1400, TextSource.OCR, tuple(words)))
    document = ReadDocument(DocumentKind.PNG, tuple(pages))
    fields = [
        {
            "name": f"f{i}",
            "type": "date" if i % 2 else "string",
            "locators": [{"kind": "label", "labels": [f"Labell{i}x{j}" for j in range(5)]}],
        }
        for i in range(100)
    ]
    definition = ExtractionWorkflowDefinition.model_validate({"name": "worst", "fields": fields})
    with within(1.0):
        request = gap_request(document, definition, {}, budget_tokens=600)
    assert request is not None and len(request.gaps) == 100
    assert request.context_tokens <= 600 < request.full_tokens
