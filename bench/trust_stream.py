"""Earned trust on a stream, simulated over one engine run: how the gate and the estimate of
`docflow.trust` would decide a dataset's documents arriving one at a time, learning or not.

    .venv/bin/python -m bench.trust_stream --workflow examples/receipt.yaml \\
        --dataset ../shared/eval/sroie-dev [--limit N] [--workers N] [--qa-sample-rate R] \\
        [--cold-start review|thresholds] [--targets 0.98,0.95] [--similar address] [--json OUT]

The engine reads every document once (`docflow eval`'s runner); then the documents are taken in
file-name order. Without learning a document's status is the engine's (the thresholds). With
learning it goes through `trust.gate.gate` with the cuts `trust.estimate.estimate` makes from
the examples of the documents reviewed so far, then QA sampling; a document that ends
REVIEW_REQUIRED is reviewed (a diligent reviewer: each labelled field with a value becomes an
example, right when the engine's value was; a field named by `--similar` is right from a
similarity of 0.9, as the stream evaluation's reviewer leaves such an address). Only labelled
fields are known, so the gate sees those. `--targets` simulates learning at each target
precision over the same reading. The real service (`docflow eval --stream`) is the reference;
this isolates the decision rule from the service and its timing. Prints the JSON report.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docflow.evaluation.compare import Comparison
from docflow.evaluation.dataset import load_dataset
from docflow.evaluation.engine import engine_factory
from docflow.evaluation.runner import DocumentOutcome, run_evaluation
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.workflow_file import load_workflow_file
from docflow.trust.estimate import Example, estimate
from docflow.trust.gate import FieldCut, Gated, gate, qa_sample


@dataclass
class Half:
    documents: int = 0
    succeeded: int = 0
    succeeded_fields: int = 0
    succeeded_right: int = 0
    reviews: int = 0


@dataclass
class Stream:
    halves: tuple[Half, Half] = field(default_factory=lambda: (Half(), Half()))
    # Each field's estimate at the end of the stream (learning only).
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        first, second = self.halves
        right = first.succeeded_right + second.succeeded_right
        fields = first.succeeded_fields + second.succeeded_fields
        return {
            "documents": first.documents + second.documents,
            "succeeded": first.succeeded + second.succeeded,
            "succeeded_field_accuracy": right / fields if fields else None,
            "automation_first_half": first.succeeded / first.documents if first.documents else 0,
            "automation_second_half": (
                second.succeeded / second.documents if second.documents else 0
            ),
            "reviews": first.reviews + second.reviews,
            **({"fields": self.fields} if self.fields else {}),
        }


SIMILAR = 0.9


def _right(c: Comparison, similar: frozenset[str]) -> bool:
    return c.correct or (c.field in similar and c.similarity >= SIMILAR)


def _result(outcome: DocumentOutcome) -> dict[str, Any]:
    fields = {
        c.field: {"value": c.found, "confidence": c.confidence}
        for c in outcome.comparisons
        if c.found is not None
    }
    return {"fields": fields}


def simulate(
    definition: ExtractionWorkflowDefinition,
    outcomes: list[DocumentOutcome],
    *,
    learning: bool,
    similar: frozenset[str],
) -> Stream:
    stream = Stream()
    evidence: dict[str, list[Example]] = {}
    tables = {f.name for f in definition.fields if f.type == FieldType.LINE_ITEMS}
    for index, outcome in enumerate(outcomes):
        half = stream.halves[0 if index < len(outcomes) / 2 else 1]
        half.documents += 1
        status = outcome.status.value
        gated = Gated(status, ())
        if learning:
            cuts = {}
            for name, examples in evidence.items():
                found = estimate(examples, target=definition.target_precision)
                cuts[name] = FieldCut(found.cut, found.examples)
            gated = gate(definition, _result(outcome), status, (), cuts)
        gated = qa_sample(definition, gated, outcome.name)
        if gated.status == "SUCCEEDED":
            half.succeeded += 1
            half.succeeded_fields += len(outcome.comparisons)
            half.succeeded_right += sum(_right(c, similar) for c in outcome.comparisons)
        elif gated.status == "REVIEW_REQUIRED":
            half.reviews += 1
            for c in outcome.comparisons:
                if c.found is not None and c.confidence is not None and c.field not in tables:
                    example = Example(c.confidence, _right(c, similar))
                    evidence.setdefault(c.field, []).append(example)
    if learning:
        for name, examples in sorted(evidence.items()):
            found = estimate(examples, target=definition.target_precision)
            stream.fields[name] = {
                "examples": found.examples,
                "correct": found.correct,
                "cut": found.cut,
                "precision": found.precision,
                "automation_rate": round(found.automation_rate, 3),
                "right_at_or_above_0.9": _share(examples, 0.9),
            }
    return stream


def _share(examples: list[Example], at: float) -> list[float | int]:
    above = [e for e in examples if e.confidence >= at]
    right = sum(e.correct for e in above)
    return [len(above), round(right / len(above), 3) if above else 0.0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflow", type=Path, required=True)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--qa-sample-rate", type=float, default=None)
    parser.add_argument("--target-precision", type=float, default=None)
    parser.add_argument("--cold-start", choices=("review", "thresholds"), default=None)
    parser.add_argument("--targets", default="")
    parser.add_argument("--similar", default="")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    definition = load_workflow_file(args.workflow)
    changes = {
        key: value
        for key, value in (
            ("qa_sample_rate", args.qa_sample_rate),
            ("target_precision", args.target_precision),
            ("cold_start", args.cold_start),
        )
        if value is not None
    }
    definition = definition.model_copy(update=changes)
    documents = load_dataset(args.dataset, limit=args.limit)
    run = run_evaluation(definition, documents, engine_factory(definition), workers=args.workers)
    outcomes = sorted(run.outcomes, key=lambda o: o.name)
    similar = frozenset(f for f in args.similar.split(",") if f)
    report: dict[str, Any] = {
        "workflow": str(args.workflow),
        "dataset": str(args.dataset),
        **changes,
        "learning": simulate(definition, outcomes, learning=True, similar=similar).report(),
        "no_learning": simulate(definition, outcomes, learning=False, similar=similar).report(),
    }
    for target in (float(t) for t in args.targets.split(",") if t):
        at = definition.model_copy(update={"target_precision": target})
        key = f"learning_at_{target:g}"
        report[key] = simulate(at, outcomes, learning=True, similar=similar).report()
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
