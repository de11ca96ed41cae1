"""`docflow eval` end to end: generated documents through the real engine, scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docflow.corpus.generate import INVOICE_LAYOUTS, generate_corpus
from docflow.evaluation.cli import app
from docflow.evaluation.engine import evaluate
from docflow.evaluation.report import to_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _split(folder: Path) -> tuple[Path, Path]:
    invoices, receipts = folder / "invoice", folder / "receipt"
    invoices.mkdir()
    receipts.mkdir()
    for path in sorted(folder.glob("*.*")):
        target = invoices if path.name.split("-")[0] in INVOICE_LAYOUTS else receipts
        path.rename(target / path.name)
    return invoices, receipts


@pytest.fixture(scope="module")
def text_pdfs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("generated")
    generate_corpus(folder, count=14, seed=20260314, kinds=("pdf",))
    return _split(folder)


def test_generated_invoice_text_pdfs_are_read_exactly(text_pdfs: tuple[Path, Path]) -> None:
    evaluation = evaluate(EXAMPLES / "invoice.yaml", text_pdfs[0], workers=2)
    report = to_json(evaluation.scores)
    assert report["documents"] == 8
    wrong = {
        (o.name, c.field, c.expected, c.found)
        for o in evaluation.run.outcomes
        for c in o.comparisons
        if not c.correct
    }
    assert not wrong
    assert report["fields"]["line_items"]["exact_match"] == 1.0  # wrapped descriptions included
    assert report["statuses"]["FAILED"] == 0


def test_generated_receipt_text_pdfs_are_read_exactly(text_pdfs: tuple[Path, Path]) -> None:
    report = to_json(evaluate(EXAMPLES / "receipt.yaml", text_pdfs[1], workers=2).scores)
    assert report["documents"] == 6
    for name in ("company", "address", "date", "total"):
        assert report["fields"][name]["exact_match"] == 1.0, name


def test_cli_writes_the_report_in_its_contract_shape(
    text_pdfs: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    args = ["--workflow", str(EXAMPLES / "receipt.yaml"), "--dataset", str(text_pdfs[1])]
    result = CliRunner().invoke(app, [*args, "--json", str(out), "--limit", "3", "--failures"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["documents"] == 3
    assert set(report["fields"]) == {"company", "address", "date", "total"}
    assert set(report["fields"]["total"]) == {"exact_match", "precision", "recall", "similarity"}
    assert sum(report["statuses"].values()) == 3
    assert "company" in result.output


def test_cli_names_the_bad_workflow_field(tmp_path: Path) -> None:
    workflow = tmp_path / "w.yaml"
    workflow.write_text("name: w\nfields:\n  - name: total\n    type: monee\n")
    args = ["--workflow", str(workflow), "--dataset", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "fields.0.type" in result.output and "field 'total'" in result.output
