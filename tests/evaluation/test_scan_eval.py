"""Generated scans through real Tesseract: the OCR path of the engine, scored by `evaluate`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from docflow.corpus.generate import LAYOUTS, generate_corpus
from docflow.evaluation.engine import evaluate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.tesseract
@pytest.mark.slow
def test_mild_receipt_scans_are_read_right(tmp_path: Path) -> None:
    corpus = tmp_path / "all"
    generate_corpus(corpus, count=14, seed=99, kinds=("scan",), dpi=300, degradation="mild")
    receipts = tmp_path / "receipts"
    receipts.mkdir()
    for path in corpus.iterdir():
        if path.name.split("-")[0] in LAYOUTS[4:]:
            shutil.copy(path, receipts / path.name)
    evaluation = evaluate(EXAMPLES / "receipt.yaml", receipts, workers=2)
    fields = evaluation.scores.fields
    assert evaluation.scores.documents == 6
    assert evaluation.scores.rejected == 0
    wrong = [
        (o.name, c.field, c.expected, c.found)
        for o in evaluation.run.outcomes
        for c in o.comparisons
        if not c.correct and c.field in ("date", "total")
    ]
    assert not wrong
    assert fields["company"].similarity >= 0.9
    assert fields["address"].similarity >= 0.8
