"""What a scenario receives (`Context`) and gives back (`Outcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from bench.harness.stats import Figures


@dataclass(frozen=True)
class Context:
    """How to run: quick (a few documents, for CI) or full, and how many repeats; `earlier`
    holds the outcomes of the scenarios already run in this invocation."""

    quick: bool
    repeat: int
    console: Console
    earlier: dict[str, Outcome] = field(default_factory=dict)

    def log(self, message: str) -> None:
        self.console.log(message)


@dataclass
class Outcome:
    """A scenario's figures, the definitions of what they measure, and any extra detail."""

    figures: Figures = field(default_factory=Figures)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Every figure under its own name, and the rest under `about`."""
        about: dict[str, Any] = {"seconds": round(self.seconds, 1), "notes": self.notes}
        if self.details:
            about["details"] = self.details
        if self.error is not None:
            about["error"] = self.error
        return {**self.figures.to_json(), "about": about}
