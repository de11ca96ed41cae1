"""`docflow eval`: measure a workflow's accuracy on a labelled dataset, with the engine alone
or (`--stream`) through a real service, reviewed document after document."""

from __future__ import annotations

import json
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from docflow.cli_operator import fail, fail_with
from docflow.client.remote import Api, ClientError
from docflow.config import Settings
from docflow.evaluation.dataset import DatasetError, load_dataset
from docflow.evaluation.embedded import ServiceFailed, embedded_service
from docflow.evaluation.engine import default_workers, evaluate
from docflow.evaluation.report import (
    calibration_table,
    failures_table,
    fields_table,
    stream_table,
    summary_table,
    to_json,
)
from docflow.evaluation.runner import EvalRun
from docflow.evaluation.scoring import Scores, score
from docflow.evaluation.stream import (
    Progress,
    StreamFailed,
    StreamRun,
    run_stream,
    workflow_body,
)
from docflow.evaluation.stream_scoring import StreamStep, stream_figures, stream_json
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.workflow_file import WorkflowFileError, load_workflow_file

# The service setting that, false, makes reviews teach nothing (`--no-learning`).
LEARNING_ENV = "DOCFLOW_LEARNING"


def eval_command(
    workflow: Path = typer.Option(..., "--workflow", help="extraction workflow YAML file"),
    dataset: Path = typer.Option(..., "--dataset", help="folder of documents with <name>.json"),
    json_out: Path | None = typer.Option(None, "--json", help="write the report as JSON here"),
    limit: int | None = typer.Option(None, "--limit", min=1, help="only the first N documents"),
    workers: int = typer.Option(
        default_workers(), "--workers", min=1, help="documents extracted in parallel"
    ),
    failures: bool = typer.Option(False, "--failures", help="list every wrong field"),
    stream: bool = typer.Option(
        False,
        "--stream",
        help="submit the documents one at a time, in file-name order, to a service started "
        "for the run, and review each REVIEW_REQUIRED one from its label",
    ),
    no_learning: bool = typer.Option(
        False, "--no-learning", help="with --stream: the service learns nothing from reviews"
    ),
    qa_sample_rate: float | None = typer.Option(
        None,
        "--qa-sample-rate",
        min=0.0,
        max=1.0,
        help="with --stream: set the workflow's qa_sample_rate to R before applying it",
    ),
) -> None:
    """Run the engine over every labelled document in DATASET and report per-field accuracy,
    the accuracy of the fields found in each confidence decile with the expected calibration
    error, and the share and field accuracy of the documents in each status.

    Free text compares case- and whitespace-insensitively, amounts as decimals, dates as ISO
    dates. Only labelled fields are scored; a document the engine rejects counts as FAILED with
    every field wrong.

    With --stream the documents go through the HTTP API of a `docflow serve` started in a
    temporary home (SQLite, local files; none of the caller's DOCFLOW_* settings) and stopped
    at the end. Each document that ends REVIEW_REQUIRED is approved, its wrong labelled fields
    corrected to the label; the report adds `stream` (automation and corrections per half,
    accuracy of the SUCCEEDED documents' fields, where address-like text of 40 characters or
    more counts right from a similarity of 0.9). --workers does not apply.
    """
    console = Console()
    try:
        if stream:
            definition, scores, steps = _streamed(
                workflow, dataset, limit=limit, learning=not no_learning, qa_rate=qa_sample_rate
            )
            run = steps.run
        else:
            evaluation = evaluate(workflow, dataset, limit=limit, workers=workers)
            definition, scores, run = evaluation.definition, evaluation.scores, evaluation.run
    except WorkflowFileError as exc:
        raise fail_with(exc, code=2) from exc
    except DatasetError as exc:
        raise fail(str(exc), code=2) from exc
    except ClientError as exc:
        raise fail(f"the service refused: {exc.message()}", code=2) from exc
    except (ServiceFailed, StreamFailed) as exc:
        raise fail(str(exc), code=2) from exc
    report = to_json(scores)
    _print(console, definition, dataset, scores, run, failures=failures)
    if stream:
        figures = stream_figures(steps.steps)
        console.print(
            stream_table(
                figures,
                title="Stream (learning on)" if not no_learning else "Stream (--no-learning)",
            )
        )
        report["stream"] = {
            "learning": not no_learning,
            "qa_sample_rate": qa_sample_rate,
            **stream_json(figures, steps.steps),
        }
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if scores.documents == 0:
        console.print("[yellow]no labelled documents found[/yellow]")
        raise typer.Exit(1)


def _print(
    console: Console,
    definition: ExtractionWorkflowDefinition,
    dataset: Path,
    scores: Scores,
    run: EvalRun,
    *,
    failures: bool,
) -> None:
    if failures:
        console.print(failures_table(run.outcomes))
    title = escape(f"{definition.name} on {dataset.name}")
    console.print(fields_table(scores, title=title))
    console.print(summary_table(scores))
    console.print(calibration_table(scores))
    if run.skipped_fields:
        skipped = ", ".join(run.skipped_fields)
        console.print(f"labelled but not in the workflow (not scored): {escape(skipped)}")


def _streamed(
    workflow: Path, dataset: Path, *, limit: int | None, learning: bool, qa_rate: float | None
) -> tuple[ExtractionWorkflowDefinition, Scores, StreamRun]:
    """Run the stream in a service of its own (a composition root: the service's settings are
    its home's defaults, plus DOCFLOW_LEARNING=false without learning)."""
    definition = load_workflow_file(workflow)
    documents = load_dataset(dataset, limit=limit)
    body = workflow_body(definition, qa_sample_rate=qa_rate)
    environment = {} if learning else {LEARNING_ENV: "false"}
    err = Console(stderr=True, soft_wrap=True)
    with _terminated_as_exit(), tempfile.TemporaryDirectory(prefix="docflow-stream-") as tmp:
        home = Path(tmp)
        database_url = Settings(home=home, database_url="").resolved_database_url()
        err.print(f"starting a service for {len(documents)} documents ...")
        with (
            embedded_service(home, database_url, environment=environment) as service,
            Api(service.base_url, service.token) as api,
        ):
            err.print(f"service on {service.base_url}; learning {'on' if learning else 'off'}")
            streamed = run_stream(api, definition, documents, body=body, progress=_progress(err))
    order = [f.name for f in definition.fields]
    return definition, score(streamed.run, order), streamed


@contextmanager
def _terminated_as_exit() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl+C does, through every `finally`, so the service it
    started is stopped too (by default SIGTERM would end this process and leave it running)."""

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _progress(err: Console) -> Progress:
    def show(done: int, total: int, step: StreamStep, seconds: float) -> None:
        review = ""
        if step.reviewed:
            fixed = ", ".join(step.corrected) or "nothing"
            review = f"; review: {step.decision}, corrected {fixed}"
        line = (
            f"[{done}/{total}] {step.name}: {step.status.value}, "
            f"{step.right}/{step.labelled} right{review} ({seconds:.1f} s)"
        )
        err.print(escape(line), highlight=False)

    return show


app = typer.Typer(add_completion=False)
app.command("eval")(eval_command)
