"""The scenarios of `python -m bench`, one module each with `run(context, outcome)`.

`SCENARIOS` is the order they run in (and the keys of the results file).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from bench.harness.scenario import Context, Outcome

SCENARIOS = (
    "scanned_batch",
    "text_batch",
    "batch_scaling",
    "distributed",
    "api_load",
    "fairness",
    "reservation",
    "overheads",
)

Runner = Callable[[Context, Outcome], None]


def runner(name: str) -> Runner:
    """The `run` function of scenario `name` (imported on demand)."""
    module = importlib.import_module(f"bench.scenarios.{name}")
    run: Runner = module.run
    return run
