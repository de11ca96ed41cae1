"""The table of docs/performance.md, printed from a results file of `python -m bench`.

    .venv/bin/python -m bench.markdown bench/results/2026-11-29.json

One row per figure that has a target, plus the figures named in `CONTEXT` that explain them:
median over the repeats, then min–max, the target and whether it was met.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SCENARIOS = (
    "scanned_batch",
    "text_batch",
    "batch_scaling",
    "distributed",
    "api_load",
    "fairness",
    "reservation",
)
# Figures without a target shown beside the targeted ones, per scenario.
CONTEXT = {
    "scanned_batch": ("docs_per_s", "tesseract_docs_per_s"),
    "text_batch": (
        "processing_docs_per_s",
        "overhead_alone_ms_p50",
        "overhead_core_ms_per_doc",
        "docs_in_flight",
        "engine_ms_p50",
    ),
    "batch_scaling": (
        "per_doc_ms_10",
        "per_doc_ms_1000",
        "queries_per_doc_10",
        "queries_per_doc_1000",
    ),
    "distributed": ("docs_per_s", "embedded_docs_per_s"),
    "api_load": ("requests_per_s", "p50_ms", "create_p99_ms", "api_workers", "rss_growth_mb"),
    "fairness": ("b_alone_s", "b_with_a_s"),
    "reservation": (
        "shared_first_start_s",
        "reserved_first_start_s",
        "shared_done_s",
        "reserved_done_s",
        "shared_noisy_left",
        "reserved_noisy_left",
    ),
}


def _number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def rows(results: dict[str, Any]) -> list[str]:
    """The markdown rows of the table."""
    lines = [
        "| scenario | figure | median | min–max | target | met |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for name in SCENARIOS:
        scenario = results["scenarios"].get(name)
        if scenario is None:
            continue
        figures = {k: v for k, v in scenario.items() if isinstance(v, dict) and "median" in v}
        chosen = [k for k, v in figures.items() if v.get("target")] + [
            k for k in CONTEXT.get(name, ()) if k in figures and not figures[k].get("target")
        ]
        for key in chosen:
            figure = figures[key]
            spread = f"{_number(figure['min'])}–{_number(figure['max'])}"
            met = {True: "yes", False: "**no**"}.get(figure.get("met"), "")
            label = f"{figure['label']} ({figure['unit']})"
            lines.append(
                f"| {name} | {label} | {_number(figure['median'])} | {spread} "
                f"| {figure.get('target') or ''} | {met} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.markdown", description=__doc__)
    parser.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    print("\n".join(rows(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
