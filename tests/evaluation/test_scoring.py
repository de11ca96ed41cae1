"""Comparison and scoring maths on hand-made engine results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docflow.evaluation.compare import compare_rows, compare_value, normalise
from docflow.evaluation.dataset import LabelledDocument, load_dataset
from docflow.evaluation.report import to_json
from docflow.evaluation.runner import Extract, run_evaluation
from docflow.evaluation.scoring import score
from docflow.extraction.definition import (
    ColumnDef,
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
)
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.result import (
    DocumentStatus,
    ExtractionResult,
    FieldResult,
    LineItemsResult,
)

DEFINITION = ExtractionWorkflowDefinition(
    name="t",
    fields=[
        FieldDef(name="company", type=FieldType.STRING),
        FieldDef(name="date", type=FieldType.DATE),
        FieldDef(name="total", type=FieldType.MONEY),
        FieldDef(
            name="line_items",
            type=FieldType.LINE_ITEMS,
            required=False,
            columns=[
                ColumnDef(name="description", labels=["Item"]),
                ColumnDef(name="amount", type=FieldType.MONEY, labels=["Amount"]),
            ],
        ),
    ],
)


def _result(status: DocumentStatus, **values: str | None) -> ExtractionResult:
    fields = {n: FieldResult(name=n, value=v, raw=v, confidence=0.9) for n, v in values.items()}
    return ExtractionResult(status=status, confidence=0.9, fields=fields)


def _doc(name: str, **fields: str) -> LabelledDocument:
    return LabelledDocument(name, Path(name), dict(fields))


def _run(pairs: dict[str, ExtractionResult | Rejected], docs: list[LabelledDocument]) -> dict:
    def make() -> Extract:
        # the path of a hand-made document is its name; the runner reads bytes from it
        return lambda data: pairs[data.decode()]

    for doc in docs:
        doc.path.write_bytes(doc.name.encode())
    return to_json(score(run_evaluation(DEFINITION, docs, make, workers=2), ["company"]))


@pytest.mark.parametrize(
    ("kind", "a", "b", "equal"),
    [
        (FieldType.STRING, "ACME  Trading\nLtd", "acme trading ltd", True),
        (FieldType.STRING, "ACME Trading", "ACME Trading Ltd", False),
        (FieldType.STRING, "NO.53,JALAN", "no.53, jalan", True),
        (FieldType.STRING, "# BLR_1", "#BLR_1", True),
        (FieldType.STRING, "#BLR_1", "BLR_1", False),
        (FieldType.MONEY, "327.00", "327", True),
        (FieldType.MONEY, "1234.50", "1234.5", True),
        (FieldType.MONEY, "1234.50", "1,234.50", False),
        (FieldType.MONEY, "0.00", "-0", True),
        (FieldType.DATE, "2026-03-14", "2026-03-14", True),
        (FieldType.DATE, "2026-03-14", "2026-14-03", False),
        (FieldType.ENUM, "EUR", "eur", True),
    ],
)
def test_normalised_comparison(kind: FieldType, a: str, b: str, equal: bool) -> None:
    assert (normalise(a, kind) == normalise(b, kind)) is equal
    assert compare_value("f", kind, a, b).correct is equal


def test_missing_value_is_wrong_with_zero_similarity() -> None:
    comparison = compare_value("total", FieldType.MONEY, "5.00", None)
    assert not comparison.correct
    assert comparison.similarity == 0.0
    assert normalise("   ", FieldType.STRING) is None


def test_similarity_of_a_near_miss() -> None:
    comparison = compare_value("a", FieldType.STRING, "NO 5, JALAN BESAR", "N0 5, JALAN BESAR")
    assert not comparison.correct
    assert 0.9 < comparison.similarity < 1.0


def test_rows_compare_cell_by_cell() -> None:
    columns = DEFINITION.field("line_items").columns
    expected = [{"description": "Pen", "amount": "2.00"}, {"description": "Ink", "amount": "5.00"}]
    exact = compare_rows("line_items", columns, expected, [dict(r) for r in expected])
    assert exact.correct and exact.similarity == 1.0
    half = compare_rows("line_items", columns, expected, [{"description": "pen", "amount": "2"}])
    assert not half.correct
    assert half.similarity == pytest.approx(0.5)
    extra = compare_rows("line_items", columns, expected[:1], [dict(r) for r in expected])
    assert not extra.correct
    assert extra.similarity == pytest.approx(2 / 4)


def test_scores_per_field_statuses_and_rejections(tmp_path: Path) -> None:
    docs = [
        _doc(str(tmp_path / "a"), company="Acme", date="2026-03-14", total="10.00"),
        _doc(str(tmp_path / "b"), company="Beta", date="2026-01-02", total="5.50"),
        _doc(str(tmp_path / "c"), company="Gamma", total="7.00"),  # date not labelled
        _doc(str(tmp_path / "d"), company="Delta", date="2026-02-02", total="1.00"),
    ]
    results: dict[str, ExtractionResult | Rejected] = {
        docs[0].name: _result(
            DocumentStatus.SUCCEEDED, company="ACME", date="2026-03-14", total="10"
        ),
        docs[1].name: _result(
            DocumentStatus.REVIEW_REQUIRED, company="Bet", date=None, total="5.50"
        ),
        docs[2].name: _result(
            DocumentStatus.SUCCEEDED, company="Gamma", date="2020-01-01", total="8.00"
        ),
        docs[3].name: Rejected(RejectCode.CORRUPT_FILE, "broken"),
    }
    report = _run(results, docs)
    assert report["documents"] == 4
    assert report["statuses"] == {"SUCCEEDED": 2, "REVIEW_REQUIRED": 1, "FAILED": 1}
    company, date, total = (report["fields"][n] for n in ("company", "date", "total"))
    assert list(report["fields"]) == ["company", "date", "total"]
    assert company["exact_match"] == 0.5  # Acme, Gamma of 4 labelled
    assert company["precision"] == round(2 / 3, 4)  # Bet wrong, rejected predicts nothing
    assert company["recall"] == 0.5
    assert date["exact_match"] == round(1 / 3, 4)  # 3 labelled, the unlabelled one unscored
    assert date["precision"] == 1.0  # one predicted, right
    assert total["exact_match"] == 0.5
    assert total["precision"] == round(2 / 3, 4)
    # 11 labelled fields, 5 right
    assert report["overall"]["field_accuracy"] == pytest.approx(round(5 / 11, 4))
    # SUCCEEDED documents a and c: 3 + 2 labelled fields, 3 + 1 right
    assert report["succeeded_field_accuracy"] == pytest.approx(round(4 / 5, 4))
    assert 0 < company["similarity"] < 1
    assert report["docs_per_second"] > 0
    assert set(report) == {
        "documents",
        "docs_per_second",
        "overall",
        "fields",
        "statuses",
        "succeeded_field_accuracy",
        "calibration",
        "status_shares",
    }
    # every value found has confidence 0.9; the missing date and the rejection have none:
    # (c's date is not labelled): 7 fields found, 5 right, all in the top decile
    assert report["calibration"] == {
        "expected_calibration_error": pytest.approx(round(0.9 - 5 / 7, 4)),
        "deciles": [
            {
                "confidence": "0.9-1.0",
                "fields": 7,
                "mean_confidence": 0.9,
                "accuracy": round(5 / 7, 4),
            }
        ],
    }
    assert report["status_shares"] == {
        "SUCCEEDED": {"documents": 2, "share": 0.5, "field_accuracy": 0.8},
        "REVIEW_REQUIRED": {"documents": 1, "share": 0.25, "field_accuracy": 0.3333},
        "FAILED": {"documents": 1, "share": 0.25, "field_accuracy": 0.0},
    }


def test_a_crashing_extractor_counts_as_failed(tmp_path: Path) -> None:
    doc = _doc(str(tmp_path / "x"), company="Acme")
    doc.path.write_bytes(b"x")

    def make() -> Extract:
        def boom(data: bytes) -> ExtractionResult:
            raise RuntimeError("engine bug")

        return boom

    run = run_evaluation(DEFINITION, [doc], make)
    assert run.outcomes[0].status == DocumentStatus.FAILED
    assert run.outcomes[0].rejected is not None and "engine bug" in run.outcomes[0].rejected
    assert to_json(score(run))["overall"]["field_accuracy"] == 0.0


def test_line_items_are_scored_when_labelled(tmp_path: Path) -> None:
    doc = LabelledDocument(
        str(tmp_path / "li"),
        tmp_path / "li",
        {"company": "Acme"},
        ({"description": "Pen", "amount": "2.00"},),
    )
    rows = LineItemsResult(
        name="line_items", rows=({"description": "Pen", "amount": "2"},), confidence=1
    )
    result = ExtractionResult(
        status=DocumentStatus.SUCCEEDED,
        confidence=1.0,
        fields={"company": FieldResult("company", "Acme", "Acme", 1.0)},
        line_items={"line_items": rows},
    )
    doc.path.write_bytes(b"li")
    report = to_json(score(run_evaluation(DEFINITION, [doc], lambda: lambda data: result)))
    assert report["fields"]["line_items"]["exact_match"] == 1.0
    assert report["overall"]["field_accuracy"] == 1.0


def test_dataset_keeps_only_labelled_documents(tmp_path: Path) -> None:
    (tmp_path / "a.pdf").write_bytes(b"%PDF")
    (tmp_path / "a.json").write_text(json.dumps({"fields": {"total": "1.00", "date": ""}}))
    (tmp_path / "b.jpg").write_bytes(b"jpg")  # no label
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "c.png").write_bytes(b"png")
    (tmp_path / "c.json").write_text(json.dumps({"fields": {"company": "C"}, "source": {}}))
    docs = load_dataset(tmp_path)
    assert [d.name for d in docs] == ["a.pdf", "c.png"]
    assert docs[0].fields == {"total": "1.00"}  # a blank label is not a label
    assert load_dataset(tmp_path, limit=1)[0].name == "a.pdf"
