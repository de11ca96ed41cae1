"""Render scores as the JSON other tools read and as a rich table for people."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from docflow.evaluation.runner import DocumentOutcome
from docflow.evaluation.scoring import Scores
from docflow.evaluation.stream_scoring import StreamFigures


def to_json(scores: Scores) -> dict[str, Any]:
    """The report in its contract shape (see `docflow eval`); figures rounded to 4 places."""
    return {
        "documents": scores.documents,
        "docs_per_second": round(scores.docs_per_second, 3),
        "overall": {"field_accuracy": round(scores.field_accuracy, 4)},
        "fields": {
            name: {
                "exact_match": round(t.exact_match, 4),
                "precision": round(t.precision, 4),
                "recall": round(t.recall, 4),
                "similarity": round(t.similarity, 4),
            }
            for name, t in scores.fields.items()
        },
        "statuses": dict(scores.statuses),
        "succeeded_field_accuracy": _round(scores.succeeded_field_accuracy),
        "calibration": {
            "expected_calibration_error": _round(scores.calibration_error),
            "deciles": [
                {
                    "confidence": f"{b.lower:.1f}-{b.upper:.1f}",
                    "fields": b.fields,
                    "mean_confidence": round(b.mean_confidence, 4),
                    "accuracy": round(b.accuracy, 4),
                }
                for b in scores.deciles
            ],
        },
        "status_shares": {
            s.status.value: {
                "documents": s.documents,
                "share": round(s.share, 4),
                "field_accuracy": _round(s.field_accuracy),
            }
            for s in scores.status_shares
        },
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def fields_table(scores: Scores, *, title: str = "Field accuracy") -> Table:
    table = Table(title=title)
    table.add_column("field")
    for heading in ("labelled", "exact match", "precision", "recall", "similarity"):
        table.add_column(heading, justify="right")
    for name, t in scores.fields.items():
        table.add_row(
            Text(name),
            str(t.labelled),
            _pct(t.exact_match),
            _pct(t.precision),
            _pct(t.recall),
            f"{t.similarity:.3f}",
        )
    table.add_section()
    table.add_row("overall", "", _pct(scores.field_accuracy), "", "", "")
    return table


def summary_table(scores: Scores) -> Table:
    table = Table(title="Run")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("documents", str(scores.documents))
    table.add_row("documents per second", f"{scores.docs_per_second:.2f}")
    for status, count in scores.statuses.items():
        table.add_row(f"status {status}", str(count))
    table.add_row("rejected by the engine", str(scores.rejected))
    succeeded = scores.succeeded_field_accuracy
    table.add_row("field accuracy when SUCCEEDED", "n/a" if succeeded is None else _pct(succeeded))
    return table


def calibration_table(scores: Scores, *, title: str = "Confidence calibration") -> Table:
    """Accuracy per confidence decile of the fields found, the ECE, and the statuses."""
    ece = scores.calibration_error
    table = Table(title=f"{title} (ECE {'n/a' if ece is None else f'{ece:.3f}'})")
    headings = ("confidence | status", "fields | documents", "mean confidence | share", "accuracy")
    for heading in headings:
        table.add_column(heading, justify="right")
    for b in scores.deciles:
        table.add_row(
            f"{b.lower:.1f}-{b.upper:.1f}",
            str(b.fields),
            f"{b.mean_confidence:.3f}",
            _pct(b.accuracy),
        )
    table.add_section()
    for s in scores.status_shares:
        accuracy = "n/a" if s.field_accuracy is None else _pct(s.field_accuracy)
        table.add_row(s.status.value, str(s.documents), _pct(s.share) + " of documents", accuracy)
    return table


def failures_table(outcomes: tuple[DocumentOutcome, ...], *, limit: int = 5000) -> Table:
    """Every wrong field: document, field, expected and found values, closeness."""
    table = Table(title="Wrong fields")
    for heading in ("document", "status", "field", "expected", "found", "sim"):
        table.add_column(heading, overflow="fold")
    shown = 0
    for outcome in outcomes:
        for c in outcome.comparisons:
            if c.correct or shown >= limit:
                continue
            found = c.found if c.found is not None else (outcome.rejected or "—")
            status = outcome.status.value
            # document text may hold square brackets: never read it as rich markup
            cells = (outcome.name, status, c.field, c.expected, found, f"{c.similarity:.2f}")
            table.add_row(*(Text(cell) for cell in cells))
            shown += 1
    return table


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def stream_table(figures: StreamFigures, *, title: str = "Stream") -> Table:
    """The stream's figures: automation and corrections per half, SUCCEEDED field accuracy."""
    table = Table(title=title)
    for heading in ("measure", "whole stream", "first half", "second half"):
        table.add_column(heading, justify="right")
    f = figures
    table.add_row("documents", str(f.documents), "", "")
    table.add_row(
        "automation (SUCCEEDED)",
        _share(f.succeeded / f.documents if f.documents else None),
        _share(f.automation_first_half),
        _share(f.automation_second_half),
    )
    table.add_row(
        "fields right when SUCCEEDED",
        _share(f.succeeded_field_accuracy),
        _share(f.succeeded_field_accuracy_first_half),
        _share(f.succeeded_field_accuracy_second_half),
    )
    table.add_row(
        "corrected fields",
        str(f.corrections),
        str(f.corrections_first_half),
        str(f.corrections_second_half),
    )
    table.add_row(
        "reviews (approved / rejected)", f"{f.reviews} ({f.approved}/{f.rejected})", "", ""
    )
    table.add_row("FAILED", str(f.failed), "", "")
    return table


def _share(value: float | None) -> str:
    return "n/a" if value is None else _pct(value)
