"""The pure parts of the gap-fill: which fields are asked for, which lines go with them,
grounding of the answers (OCR-tolerant), their provenance and the status afterwards."""

from __future__ import annotations

from typing import Any

from tests.support.timing import within

from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.model import DocumentKind, Page, ReadDocument, Rect, TextSource, Word
from docflow.llm.context import EXTRACT, VERIFY, Gap, Line, gap_request, tokens, weak_fields
from docflow.llm.gapfill import tasks
from docflow.llm.grounding import Source, apply_answer, ground, rescore
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
    Line(1, "T0TAL RM 55.1O", (0.1, 0.5, 0.4, 0.52)),
    Line(1, "NO. 53, JALAN BESAR,", (0.1, 0.1, 0.5, 0.12)),
    Line(1, "45600 BATANG BERJUNTAI", (0.1, 0.13, 0.5, 0.15)),
)
SOURCE = Source("openai", "m", "simple", "extract")


def test_grounding_tolerates_ocr_errors_and_spans_lines() -> None:
    assert ground("55.10", LINES)[0] >= 90  # "55.1O" as OCR read it
    score, window = ground("NO. 53, JALAN BESAR, 45600 BATANG BERJUNTAI", LINES)
    assert score >= 90 and len(window) == 2
    assert ground("INV-12345", LINES)[0] < 90


def test_a_grounded_value_is_accepted_and_an_invented_one_goes_to_review() -> None:
    fields = {"invoice_number": _field("INV-9", 0.95), "total": _field(None, 0.0)}
    fields["issue_date"] = _field(None, 0.0)
    gaps = [Gap("total", EXTRACT, None, "simple"), Gap("issue_date", EXTRACT, None, "simple")]
    out = apply_answer(
        fields, DEFINITION, gaps, {"total": "55.10", "issue_date": "01/01/2030"}, LINES, SOURCE
    )
    total, date = out["total"], out["issue_date"]
    assert total["value"] == "55.10" and total["confidence"] == 0.9 and total["reading"] == "llm"
    assert total["box"] == {"x0": 0.1, "y0": 0.5, "x1": 0.4, "y1": 0.52}
    assert total["llm"]["grounded"] and total["llm"]["tier"] == "simple"
    assert date["value"] == "2030-01-01" and not date["llm"]["grounded"]
    assert date["confidence"] == 0.6  # halfway between the thresholds: a reviewer decides
    status, confidence, reasons = rescore({"fields": out}, DEFINITION)
    assert status == "REVIEW_REQUIRED" and confidence == 0.6
    assert reasons == ("issue_date: confidence 0.60 below 0.80; not found in the document's text",)


def test_a_verification_that_disagrees_keeps_ocr_value_for_the_reviewer() -> None:
    fields = {"total": _field("55.10", 0.7)}
    gaps = [Gap("total", VERIFY, "55.10", "simple")]
    for answer in ("99.99", "NO. 53, JALAN BESAR,"):  # not in the text; in it, but another value
        out = apply_answer(fields, DEFINITION, gaps, {"total": answer}, LINES, SOURCE)
        assert {k: v for k, v in out["total"].items() if k != "llm"} == fields["total"]
        assert out["total"]["llm"]["answer"] == answer
    confirmed = apply_answer(fields, DEFINITION, gaps, {"total": "55.10"}, LINES, SOURCE)
    assert confirmed["total"]["confidence"] == 0.9 and confirmed["total"]["locator"] == "llm"


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
