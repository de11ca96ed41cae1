"""`docflow eval --stream` end to end: generated receipts through a real `docflow serve`
started for the run, each REVIEW_REQUIRED document reviewed through the review API from its
label."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from docflow.corpus.generate import RECEIPT_LAYOUTS, generate_corpus
from docflow.evaluation.cli import app

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WRONG_TOTAL = "999.99"


@pytest.fixture(scope="module")
def receipts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three generated receipt text PDFs with their labels; the second's total mislabelled, so
    a reviewer trusting the label corrects a value the engine read right."""
    generated = tmp_path_factory.mktemp("generated")
    generate_corpus(generated, count=7, seed=20261206, kinds=("pdf",))
    folder = tmp_path_factory.mktemp("receipts")
    for path in sorted(generated.iterdir()):
        if path.name.split("-")[0] in RECEIPT_LAYOUTS:
            shutil.copy(path, folder / path.name)
    second = sorted(folder.glob("*.json"))[1]
    label = json.loads(second.read_text())
    label["fields"]["total"] = WRONG_TOTAL
    second.write_text(json.dumps(label))
    return folder


def _run(tmp_path: Path, workflow: Path, dataset: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "report.json"
    args = ["--workflow", str(workflow), "--dataset", str(dataset), "--stream"]
    result = CliRunner().invoke(app, [*args, *extra, "--json", str(out)])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_review_required_documents_are_approved_or_corrected_from_their_label(
    receipts: Path, tmp_path: Path
) -> None:
    # every value below 0.999 waits for a person: each document is reviewed
    strict = tmp_path / "strict.yaml"
    text = (EXAMPLES / "receipt.yaml").read_text()
    strict.write_text(text.replace("review_threshold: 0.8", "review_threshold: 0.999"))
    report = _run(tmp_path, strict, receipts)
    assert {"documents", "overall", "fields", "statuses", "calibration"} <= set(report)
    stream = report["stream"]
    assert stream["documents"] == report["documents"] == 3
    assert stream["reviews"] == 3 and stream["succeeded"] == 0
    assert stream["learning"] is True
    steps = {Path(s["name"]).stem: s for s in stream["steps"]}
    first, second, third = sorted(steps)
    # as the review API recorded them: the mislabelled total corrected, the others approved
    assert steps[second]["decision"] == "approve"
    assert steps[second]["corrected"] == ["total"]
    for name in (first, third):
        assert steps[name]["decision"] == "approve" and steps[name]["corrected"] == []
    assert (stream["corrections"], stream["corrections_first_half"]) == (1, 0)
    assert stream["corrections_second_half"] == 1
    assert report["fields"]["total"]["exact_match"] == pytest.approx(2 / 3, abs=1e-4)


def test_succeeded_documents_are_not_reviewed(receipts: Path, tmp_path: Path) -> None:
    report = _run(tmp_path, EXAMPLES / "receipt.yaml", receipts, "--limit", "1", "--no-learning")
    stream = report["stream"]
    assert stream["learning"] is False
    assert stream["succeeded"] == 1 and stream["reviews"] == 0
    assert stream["succeeded_field_accuracy"] == 1.0
    assert stream["automation_second_half"] == 1.0
