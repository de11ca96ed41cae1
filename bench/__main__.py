"""`python -m bench`: the whole-system benchmark suite (issue: performance).

    python -m bench [--quick] [--only NAME[,NAME]] [--repeat N] [--out PATH]

Scenarios (bench/scenarios/): scanned_batch, text_batch, batch_scaling, distributed, api_load,
fairness, reservation, overheads. Each starts real `docflow` processes on free ports with
temporary data, measures its reference in the same run, and repeats (3 times by default, once
with --quick).
Prints a table of every figure with its median, spread and target, and writes the results file:
bench/results/<date>.json, or bench/results/quick-<date>.json with --quick (not committed).
Targets are reported, never asserted; the exit status is 1 when a scenario could not run.
PostgreSQL: DOCFLOW_BENCH_POSTGRES_URL, a role that may create and drop databases (default:
postgresql+psycopg://postgres@127.0.0.1:5432/postgres).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

import structlog
from rich.console import Console

from bench.harness.machine import load_average, machine_facts
from bench.harness.processes import UNCLEAN_STOPS
from bench.harness.report import table, write_results
from bench.harness.scenario import Context, Outcome
from bench.scenarios import SCENARIOS, runner

RESULTS = Path(__file__).resolve().parent / "results"


def _names(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown scenario {', '.join(unknown) or value!r}; choose among {', '.join(SCENARIOS)}"
        )
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few documents per scenario")
    parser.add_argument("--only", type=_names, help="comma-separated scenario names")
    parser.add_argument("--repeat", type=int, help="runs per scenario (default 3; 1 with --quick)")
    parser.add_argument("--out", type=Path, help="results file (default under bench/results/)")
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.out is None:
        day = datetime.now(UTC).date().isoformat()
        args.out = RESULTS / (f"quick-{day}.json" if args.quick else f"{day}.json")
    return args


def run_scenario(name: str, ctx: Context) -> Outcome:
    """Run one scenario; an exception is recorded as its error, with the figures so far."""
    outcome = Outcome()
    started = time.perf_counter()
    try:
        runner(name)(ctx, outcome)
    except Exception as exc:
        # The first line says what failed; the rest (a process's log tail) goes to the details.
        headline, _, rest = str(exc).partition("\n")
        outcome.error = f"{type(exc).__name__}: {headline}"
        outcome.details["error_detail"] = "\n".join([rest, *getattr(exc, "__notes__", [])])
        ctx.console.print(f"[red]{name} failed[/red]\n{traceback.format_exc()}")
    outcome.notes.extend(UNCLEAN_STOPS)
    UNCLEAN_STOPS.clear()
    outcome.seconds = time.perf_counter() - started
    ctx.log(f"{name}: {outcome.seconds:.0f} s")
    return outcome


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # The engine's debug lines (engine times are measured in this process) would cost time.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    console = Console()
    if not console.is_terminal:  # CI logs: wide enough for the table
        console = Console(width=150)
    ctx = Context(quick=args.quick, repeat=args.repeat, console=console)
    facts = machine_facts()
    names = args.only or list(SCENARIOS)
    outcomes = ctx.earlier
    for name in names:
        outcomes[name] = run_scenario(name, ctx)
    facts["machine"]["load_average_at_end"] = load_average()
    console.print(table(outcomes))
    write_results(args.out, facts, outcomes, order=SCENARIOS, quick=args.quick, repeat=args.repeat)
    console.print(f"results: {args.out}")
    return 1 if any(o.error is not None for o in outcomes.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
