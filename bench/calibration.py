"""Fit the field-confidence combination, and show how well it is calibrated and what the
review thresholds give.

    .venv/bin/python -m bench.calibration --cache DIR [--count N] [--eval-dir DIR]

Reads the sets once into DIR (see `bench.calibration_reads`; a set already there is reused),
runs the field stages on every document, and pairs each labelled field that was found with its
`Signals` and whether its value is right. A logistic regression on `confidence.features` (L2,
Newton steps) is fitted on the generated corpora and sroie-dev; invoice2data is only checked.
Prints the coefficients (as `COEFFICIENTS` in `extraction/fields/confidence.py` holds them),
each set's confidence deciles and expected calibration error with the engine's confidence and
with the fit, and, per set and workflow, the statuses each threshold would give with the
engine's confidence (the document's confidence is its weakest required field).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.accuracy import ROOT, WORKFLOWS
from bench.calibration_reads import load_set, read_sets, set_names
from docflow.evaluation.calibration import deciles, expected_calibration_error
from docflow.evaluation.compare import compare_value
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.fields.combine import choose_values, field_result, field_signals
from docflow.extraction.fields.confidence import Signals, features, field_confidence
from docflow.extraction.fields.locate import locate
from docflow.extraction.fields.view import view_document
from docflow.extraction.model import ReadDocument
from docflow.extraction.profiles import merge
from docflow.extraction.workflow_file import load_workflow_file

CHECK_ONLY = ("invoice2data",)
L2 = 1.0
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.825, 0.85, 0.875, 0.9)


@dataclass(frozen=True, slots=True)
class FieldRow:
    set: str
    workflow: str
    document: str
    field: str
    required: bool
    signals: Signals | None  # None: not found
    engine_confidence: float
    correct: bool


def field_rows(set_name: str, reads: Sequence, definitions: dict) -> list[FieldRow]:
    rows: list[FieldRow] = []
    for read in reads:
        definition: ExtractionWorkflowDefinition = definitions[read.workflow]
        if not isinstance(read.document, ReadDocument):
            continue
        profile = merge(definition.selected_profiles)
        view = view_document(read.document)
        located = locate(view, definition, profile)
        chosen = choose_values(located, view, definition, profile)
        for field in definition.fields:
            expected = read.fields.get(field.name)
            if field.type == FieldType.LINE_ITEMS or expected is None:
                continue
            choice = chosen.by_field[field.name]
            result = field_result(choice)
            correct = compare_value(field.name, field.type, expected, result.value).correct
            signals = field_signals(choice) if choice.winner and result.value else None
            rows.append(
                FieldRow(
                    set_name,
                    read.workflow,
                    read.name,
                    field.name,
                    field.required,
                    signals,
                    result.confidence,
                    correct,
                )
            )
    return rows


def fit(rows: Sequence[FieldRow]) -> dict[str, float]:
    """Logistic regression of `correct` on the features of the found fields."""
    found = [r for r in rows if r.signals is not None]
    return logistic([features(r.signals) for r in found], [r.correct for r in found])  # type: ignore[arg-type]


def logistic(samples: Sequence[dict[str, float]], outcomes: Sequence[bool]) -> dict[str, float]:
    """Logistic regression of `outcomes` on named features (Newton's method with an L2 penalty
    on every weight but the one named "intercept")."""
    names = list(samples[0])
    x = np.array([[sample[n] for n in names] for sample in samples])
    y = np.array([float(outcome) for outcome in outcomes])
    penalty = L2 * np.diag([0.0 if n == "intercept" else 1.0 for n in names])
    w = np.zeros(len(names))
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        gradient = x.T @ (p - y) + penalty @ w
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(len(names))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return {n: round(float(v), 3) for n, v in zip(names, w, strict=True)}


def calibration_lines(rows: Sequence[FieldRow], confidence: Callable[[FieldRow], float]) -> str:
    bins = deciles((confidence(r), r.correct) for r in rows if r.signals is not None)
    ece = expected_calibration_error(bins)
    cells = " ".join(f"{b.lower:.1f}:{b.fields}@{b.accuracy * 100:.0f}%" for b in bins)
    return f"ECE {ece:.3f} | {cells}"


def statuses(rows: Sequence[FieldRow], confidence: Callable[[FieldRow], float]) -> list[str]:
    """Per threshold: as review_threshold, the share SUCCEEDED and their field accuracy (all
    labelled fields, and required ones only); as confidence_threshold, the share FAILED; and
    the share of documents with a required field missing (always FAILED)."""
    documents: dict[str, list[FieldRow]] = {}
    for row in rows:
        documents.setdefault(row.document, []).append(row)
    lines = []
    missing = sum(
        any(r.required and r.signals is None for r in fields) for fields in documents.values()
    )
    for threshold in THRESHOLDS:
        sure = [
            fields
            for fields in documents.values()
            if all(
                r.signals is not None and confidence(r) >= threshold for r in fields if r.required
            )
        ]
        failed = len(documents) - len(sure)
        labelled = [r for fields in sure for r in fields]
        required = [r for r in labelled if r.required]
        lines.append(
            f"  review_threshold {threshold:.2f}: SUCCEEDED {len(sure)}/{len(documents)}"
            f" ({len(sure) / len(documents) * 100:.0f}%), fields right"
            f" {_share(labelled)} (required fields {_share(required)});"
            f" as confidence_threshold: FAILED {failed / len(documents) * 100:.0f}%"
        )
    lines.append(f"  a required field not found: {missing}/{len(documents)} documents")
    return lines


def _share(rows: Sequence[FieldRow]) -> str:
    return f"{sum(r.correct for r in rows) / len(rows) * 100:.1f}%" if rows else "n/a"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--count", type=int, default=21, help="generated documents per corpus")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    read_sets(
        args.cache, count=args.count, seed=args.seed, eval_dir=args.eval_dir, workers=args.workers
    )
    definitions = {name: load_workflow_file(path) for name, path in WORKFLOWS.items()}
    by_set = {
        name: field_rows(name, load_set(args.cache, name), definitions) for name in set_names()
    }
    coefficients = fit([r for name, rows in by_set.items() if name not in CHECK_ONLY for r in rows])
    print("COEFFICIENTS =", coefficients)
    for name, rows in by_set.items():
        role = "check" if name in CHECK_ONLY else "fit"
        print(f"\n{name} ({role}, {sum(r.signals is not None for r in rows)} fields found)")
        print("  engine:", calibration_lines(rows, lambda r: r.engine_confidence))
        print(
            "  fitted:",
            calibration_lines(rows, lambda r: field_confidence(r.signals, coefficients)),
        )  # type: ignore[arg-type]
        for workflow in sorted({r.workflow for r in rows}):
            mine = [r for r in rows if r.workflow == workflow]
            print(f"  {workflow}, with the engine's confidence:")
            print("\n".join(statuses(mine, lambda r: r.engine_confidence)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
