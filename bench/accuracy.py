"""Accuracy benchmark: generated corpora (text PDFs and scans) and the labelled real documents.

    .venv/bin/python bench/accuracy.py [--quick] [--count N] [--eval-dir DIR] [--workers N]
        [--reading fast|accurate|auto] [--real-only]

Generates corpora into a temporary folder (text PDFs; scans at 300 dpi mild; and the harder
degradations: 300 dpi medium and hard, 200 dpi mild), evaluates each with examples/invoice.yaml
(invoices) and examples/receipt.yaml (receipts), then the real documents of `../shared/eval`
beside the repository when present (sroie-dev with receipt.yaml, invoice2data with
invoice.yaml). `--reading` runs every workflow under that reading policy instead of its own
(the table then shows the pages each OCR engine read: under `auto`, the share of OCRed pages
that PP-OCR re-read). Prints each set's confidence deciles, calibration error and statuses, one
table, checks the targets of the extraction issue, and writes
bench/results/accuracy-<date>.json. Timings are from a shared machine: treat them as noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from docflow.corpus.generate import INVOICE_LAYOUTS, generate_corpus
from docflow.evaluation.dataset import load_dataset
from docflow.evaluation.engine import Evaluation, engine_factory
from docflow.evaluation.report import calibration_table, failures_table, to_json
from docflow.evaluation.runner import Extract, run_evaluation
from docflow.evaluation.scoring import score
from docflow.extraction.definition import ReadingPolicy
from docflow.extraction.errors import Rejected
from docflow.extraction.result import ExtractionResult
from docflow.extraction.workflow_file import load_workflow_file

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
WORKFLOWS = {"invoice": EXAMPLES / "invoice.yaml", "receipt": EXAMPLES / "receipt.yaml"}
# set name -> (kinds, dpi, degradation)
CORPORA = {
    "generated text PDF": (("pdf",), 300, "mild"),
    "generated scan 300 dpi mild": (("scan",), 300, "mild"),
    "generated scan 300 dpi medium": (("scan",), 300, "medium"),
    "generated scan 300 dpi hard": (("scan",), 300, "hard"),
    "generated scan 200 dpi mild": (("scan",), 200, "mild"),
}
REAL = {"sroie-dev": "receipt", "invoice2data": "invoice"}


@dataclass(frozen=True, slots=True)
class Row:
    corpus: str
    workflow: str
    evaluation: Evaluation
    pages_read: dict[str, int]

    @property
    def report(self) -> dict[str, Any]:
        return to_json(self.evaluation.scores)


def evaluate(
    workflow: Path,
    dataset: Path,
    *,
    reading: str | None,
    workers: int,
    limit: int | None = None,
) -> tuple[Evaluation, dict[str, int]]:
    """`evaluation.engine.evaluate` under the reading policy given (None: the workflow's own),
    with the pages each reading read over the whole set."""
    definition = load_workflow_file(workflow)
    if reading is not None:
        definition = definition.model_copy(update={"reading": ReadingPolicy(reading)})
    pages: Counter[str] = Counter()
    lock = threading.Lock()
    factory = engine_factory(definition)

    def make() -> Extract:
        extract = factory()

        def counted(data: bytes) -> ExtractionResult | Rejected:
            result = extract(data)
            if isinstance(result, ExtractionResult):
                with lock:
                    pages.update(result.pages_read)
            return result

        return counted

    documents = load_dataset(dataset, limit=limit)
    run = run_evaluation(definition, documents, make, workers=workers)
    scores = score(run, [f.name for f in definition.fields])
    return Evaluation(definition, run, scores), dict(pages)


def split_by_workflow(folder: Path) -> dict[str, Path]:
    """Move the generated receipts and invoices into sub-folders named after their workflow."""
    targets = {name: folder / name for name in WORKFLOWS}
    for target in targets.values():
        target.mkdir()
    for path in sorted(folder.iterdir()):
        if path.is_file():
            kind = "invoice" if path.name.split("-")[0] in INVOICE_LAYOUTS else "receipt"
            shutil.move(path, targets[kind] / path.name)
    return targets


def run_generated(work: Path, args: argparse.Namespace, console: Console) -> list[Row]:
    rows = []
    for name, (kinds, dpi, level) in CORPORA.items():
        folder = work / name.replace(" ", "-")
        started = time.perf_counter()
        generate_corpus(
            folder, count=args.count, seed=args.seed, kinds=kinds, dpi=dpi, degradation=level
        )
        console.log(f"generated {name} in {time.perf_counter() - started:.1f} s")
        for workflow, subset in split_by_workflow(folder).items():
            evaluation, pages = evaluate(
                WORKFLOWS[workflow], subset, reading=args.reading, workers=args.workers
            )
            rows.append(Row(name, workflow, evaluation, pages))
            console.log(f"evaluated {name} / {workflow}")
    return rows


def run_real(eval_dir: Path, args: argparse.Namespace, console: Console) -> list[Row]:
    rows = []
    for folder, workflow in REAL.items():
        dataset = eval_dir / folder
        if not dataset.is_dir():
            console.log(f"no {dataset}, skipped")
            continue
        evaluation, pages = evaluate(
            WORKFLOWS[workflow],
            dataset,
            reading=args.reading,
            limit=args.real_limit,
            workers=args.workers,
        )
        rows.append(Row(folder, workflow, evaluation, pages))
        console.log(f"evaluated {folder}")
    return rows


def combined_accuracy(rows: list[Row], corpus: str) -> float | None:
    """Field accuracy of a generated corpus over both workflows, weighted by labelled fields."""
    tallies = [t for r in rows if r.corpus == corpus for t in r.evaluation.scores.fields.values()]
    labelled = sum(t.labelled for t in tallies)
    return sum(t.correct for t in tallies) / labelled if labelled else None


def targets(rows: list[Row]) -> dict[str, dict[str, Any]]:
    """Each target of the issues (accuracy, then tiered reading) with the measured figure and
    whether it is met."""
    checks: dict[str, tuple[float | None, float]] = {
        "generated text PDF field accuracy": (combined_accuracy(rows, "generated text PDF"), 1.0),
    }
    for corpus, (_, dpi, _) in CORPORA.items():
        if corpus != "generated text PDF":
            checks[f"{corpus} field accuracy"] = (
                combined_accuracy(rows, corpus),
                0.97 if dpi >= 300 else 0.95,
            )
    by_corpus = {r.corpus: r.report for r in rows}
    if "sroie-dev" in by_corpus:
        fields = by_corpus["sroie-dev"]["fields"]
        checks["sroie-dev date exact match"] = (fields.get("date", {}).get("exact_match"), 0.93)
        checks["sroie-dev total exact match"] = (fields.get("total", {}).get("exact_match"), 0.90)
        checks["sroie-dev company exact match"] = (
            fields.get("company", {}).get("exact_match"),
            0.80,
        )
        checks["sroie-dev address similarity"] = (fields.get("address", {}).get("similarity"), 0.88)
    if "invoice2data" in by_corpus:
        checks["invoice2data field accuracy"] = (
            by_corpus["invoice2data"]["overall"]["field_accuracy"],
            0.85,
        )
    for corpus in REAL:
        if corpus in by_corpus:
            checks[f"{corpus} field accuracy when SUCCEEDED"] = (
                by_corpus[corpus]["succeeded_field_accuracy"],
                0.97,
            )
    ceilings: dict[str, tuple[float | None, float]] = {}
    if "sroie-dev" in by_corpus:
        shares = by_corpus["sroie-dev"]["status_shares"]
        checks["sroie-dev share SUCCEEDED"] = (shares["SUCCEEDED"]["share"], 0.40)
        ceilings["sroie-dev share FAILED"] = (shares["FAILED"]["share"], 0.15)
    return {
        **{name: _check(v, t, at_least=True) for name, (v, t) in checks.items()},
        **{name: _check(v, t, at_least=False) for name, (v, t) in ceilings.items()},
    }


def _check(value: float | None, target: float, *, at_least: bool) -> dict[str, Any]:
    met = value is not None and (value >= target if at_least else value <= target)
    return {
        "measured": None if value is None else round(value, 4),
        "target": target,
        "at_least": at_least,
        "met": met,
    }


def table(rows: list[Row], checks: dict[str, dict[str, Any]]) -> tuple[Table, Table]:
    main = Table(title="Extraction accuracy (field exact match unless stated)")
    for heading in (
        "corpus",
        "workflow",
        "docs",
        "field accuracy",
        "weakest fields",
        "docs/s",
        "S/R/F",
        "pages read",
    ):
        main.add_column(
            heading,
            justify="left" if heading in ("corpus", "workflow", "weakest fields") else "right",
        )
    for row in rows:
        report = row.report
        weakest = sorted(report["fields"].items(), key=lambda kv: kv[1]["exact_match"])[:3]
        statuses = report["statuses"]
        main.add_row(
            row.corpus,
            row.workflow,
            str(report["documents"]),
            f"{report['overall']['field_accuracy'] * 100:.1f}%",
            ", ".join(f"{n} {v['exact_match'] * 100:.0f}%" for n, v in weakest),
            f"{report['docs_per_second']:.2f}",
            f"{statuses['SUCCEEDED']}/{statuses['REVIEW_REQUIRED']}/{statuses['FAILED']}",
            pages_read(row.pages_read),
        )
    goal = Table(title="Targets")
    for heading in ("target", "measured", "goal", "met"):
        goal.add_column(heading)
    for name, check in checks.items():
        measured = "n/a" if check["measured"] is None else f"{check['measured']:.3f}"
        bound = ">=" if check["at_least"] else "<="
        target = f"{bound} {check['target']:.2f}"
        goal.add_row(name, measured, target, "yes" if check["met"] else "NO")
    return main, goal


def pages_read(pages: dict[str, int]) -> str:
    """The pages each reading read, and under `auto` the share of OCRed pages re-read."""
    text = ", ".join(f"{name} {count}" for name, count in sorted(pages.items()))
    first = pages.get("tesseract", 0)
    if first and pages.get("ppocr"):
        text += f" (re-read {pages['ppocr'] / first * 100:.0f}%)"
    return text


def portable(argv: list[str]) -> list[str]:
    """The arguments without the folders given (they name this machine's paths)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--eval-dir", "--out"):
            skip = True
        elif not arg.startswith(("--eval-dir=", "--out=")):
            kept.append(arg)
    return kept


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="7 generated documents per corpus, 20 receipts"
    )
    parser.add_argument("--count", type=int, default=70, help="generated documents per corpus")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--real-limit", type=int, default=None, help="documents per real set")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--failures", action="store_true", help="print every wrong field")
    parser.add_argument("--out", type=Path, default=None, help="JSON report path")
    parser.add_argument(
        "--reading",
        choices=[policy.value for policy in ReadingPolicy],
        default=None,
        help="run every workflow under this reading policy (default: the workflow's own)",
    )
    parser.add_argument("--real-only", action="store_true", help="only the real documents")
    args = parser.parse_args(argv)
    if args.quick:
        args.count = min(args.count, 7)
        args.real_limit = args.real_limit or 20
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="docflow-accuracy-") as tmp:
        rows = [] if args.real_only else run_generated(Path(tmp), args, console)
        rows += run_real(args.eval_dir, args, console)
    checks = targets(rows)
    if args.failures:
        for row in rows:
            console.print(f"[bold]{row.corpus} / {row.workflow}[/bold]")
            console.print(failures_table(row.evaluation.run.outcomes))
    for row in rows:
        title = f"Calibration, {row.corpus} / {row.workflow}"
        console.print(calibration_table(row.evaluation.scores, title=title))
    for part in table(rows, checks):
        console.print(part)
    now = datetime.now(UTC)
    report = {
        "date": now.isoformat(timespec="seconds"),
        "command": " ".join(["python bench/accuracy.py", *portable(argv)]),
        "real_documents": sorted({r.corpus for r in rows if r.corpus in REAL}),
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "generated_per_corpus": args.count,
        "seed": args.seed,
        "reading": args.reading,
        "runs": [
            {"corpus": r.corpus, "workflow": r.workflow, "pages_read": r.pages_read, **r.report}
            for r in rows
        ],
        "targets": checks,
    }
    out = args.out or ROOT / "bench" / "results" / f"accuracy-{now:%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
