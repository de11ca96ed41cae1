"""What encryption of stored files and metrics cost: the text batch of `text_batch` (one-page
text PDFs through `docflow serve`) run side by side in one invocation, in four deployments per
repeat: everything off (twice: the noise), encryption on, metrics on.

Figures: for encryption and for metrics, the ratio of the server's CPU time and of the batch's
wall time (POST to terminal) to the run with both off; and the same ratio between the two runs
with both off, which is the noise of one comparison on this machine. The order of the four runs
rotates with each repeat, so a machine that slows down during the invocation does not charge
one of them.
"""

from __future__ import annotations

import time

from bench.harness.documents import BenchFile, documents
from bench.harness.processes import embedded
from bench.harness.scenario import Context, Outcome
from bench.harness.stats import at_most
from bench.scenarios.text_batch import FULL, QUICK, measure_batch

OFF = {"DOCFLOW_ENCRYPT_FILES": "false", "DOCFLOW_METRICS_ENABLED": "false"}
CONFIGS = {
    "baseline": OFF,
    "baseline_again": OFF,
    "encryption": {**OFF, "DOCFLOW_ENCRYPT_FILES": "true"},
    "metrics": {**OFF, "DOCFLOW_METRICS_ENABLED": "true"},
}
GOAL = 1.05


def _run(env: dict[str, str], files: list[BenchFile]) -> tuple[float, float]:
    """(server CPU seconds, batch wall seconds) of one deployment's measured batch (the CPU
    time includes its two-document warm-up batch)."""
    with embedded(env=env) as deployment:
        cpu_before = deployment.api.cpu_seconds()
        batch = measure_batch(deployment, files)
        cpu = deployment.api.cpu_seconds() - cpu_before
    return cpu, batch.submitted.seconds


def run(ctx: Context, out: Outcome) -> None:
    count = QUICK if ctx.quick else FULL
    files = documents("pdf", count=count)
    f = out.figures
    for name, label in (
        ("encryption", "encryption on"),
        ("metrics", "metrics on"),
        ("baseline_again", "noise: a second run with both off"),
    ):
        target = None if name == "baseline_again" else at_most(GOAL)
        f.declare(f"{name}_cpu_ratio", "×", f"{label}: server CPU time / both off", target)
        f.declare(f"{name}_wall_ratio", "×", f"{label}: batch wall time / both off", target)
    out.notes.append(
        f"{count} one-page text PDFs per run through embedded `docflow serve` (SQLite, local "
        "folder); four fresh deployments per repeat (both off twice, encryption on, metrics on), "
        "in an order rotating per repeat; CPU = the server process's user+system time over the "
        "warm-up and measured batches; wall = the measured batch, POST to terminal"
    )
    names = list(CONFIGS)
    for repeat in range(ctx.repeat):
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        measured: dict[str, tuple[float, float]] = {}
        for name in order:
            started = time.perf_counter()
            measured[name] = _run(CONFIGS[name], files)
            ctx.log(f"overheads {name}: {measured[name]} ({time.perf_counter() - started:.0f} s)")
        cpu0, wall0 = measured["baseline"]
        for name in ("encryption", "metrics", "baseline_again"):
            cpu, wall = measured[name]
            f.add(f"{name}_cpu_ratio", cpu / cpu0)
            f.add(f"{name}_wall_ratio", wall / wall0)
    out.details["documents"] = count
