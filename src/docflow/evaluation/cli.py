"""`docflow eval`: measure a workflow's accuracy on a labelled dataset."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from docflow.cli_operator import fail, fail_with
from docflow.evaluation.dataset import DatasetError
from docflow.evaluation.engine import default_workers, evaluate
from docflow.evaluation.report import (
    calibration_table,
    failures_table,
    fields_table,
    summary_table,
    to_json,
)
from docflow.extraction.workflow_file import WorkflowFileError


def eval_command(
    workflow: Path = typer.Option(..., "--workflow", help="extraction workflow YAML file"),
    dataset: Path = typer.Option(..., "--dataset", help="folder of documents with <name>.json"),
    json_out: Path | None = typer.Option(None, "--json", help="write the report as JSON here"),
    limit: int | None = typer.Option(None, "--limit", min=1, help="only the first N documents"),
    workers: int = typer.Option(
        default_workers(), "--workers", min=1, help="documents extracted in parallel"
    ),
    failures: bool = typer.Option(False, "--failures", help="list every wrong field"),
) -> None:
    """Run the engine over every labelled document in DATASET and report per-field accuracy,
    the accuracy of the fields found in each confidence decile with the expected calibration
    error, and the share and field accuracy of the documents in each status.

    Free text compares case- and whitespace-insensitively, amounts as decimals, dates as ISO
    dates. Only labelled fields are scored; a document the engine rejects counts as FAILED with
    every field wrong.
    """
    console = Console()
    try:
        evaluation = evaluate(workflow, dataset, limit=limit, workers=workers)
    except WorkflowFileError as exc:
        raise fail_with(exc, code=2) from exc
    except DatasetError as exc:
        raise fail(str(exc), code=2) from exc
    scores = evaluation.scores
    if failures:
        console.print(failures_table(evaluation.run.outcomes))
    title = escape(f"{evaluation.definition.name} on {dataset.name}")
    console.print(fields_table(scores, title=title))
    console.print(summary_table(scores))
    console.print(calibration_table(scores))
    if evaluation.run.skipped_fields:
        skipped = ", ".join(evaluation.run.skipped_fields)
        console.print(f"labelled but not in the workflow (not scored): {escape(skipped)}")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(to_json(scores), indent=2) + "\n", encoding="utf-8")
    if scores.documents == 0:
        console.print("[yellow]no labelled documents found[/yellow]")
        raise typer.Exit(1)


app = typer.Typer(add_completion=False)
app.command("eval")(eval_command)
