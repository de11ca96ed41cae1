"""The benchmark suite's contract with whoever reads its results: a quick run of one scenario
writes every figure under its plain name with a median and a spread (and a target and whether it
was met where there is one), with the machine facts; a scenario that cannot run fails the run.
Targets are never asserted here (the suite reports them); `.ci/run` runs every scenario quickly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_bench(
    args: list[str], out: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_a_quick_run_writes_every_figure_with_its_median_spread_and_target(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results.json"
    done = run_bench(["--only", "text_batch"], out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["mode"] == "quick" and results["repeat"] == 1
    assert results["machine"]["cpu_count"] >= 1 and results["machine"]["cpu_model"]
    assert {"python", "docflow", "dbos", "tesseract_cli"} <= results["versions"].keys()
    scenario = results["scenarios"]["text_batch"]
    assert "error" not in scenario["about"]
    for name in ("docs_per_s", "overhead_ms_p50", "engine_ms_p50", "projection_lag_ms_p99"):
        figure = scenario[name]
        assert {"median", "min", "max", "q1", "q3", "n", "unit"} <= figure.keys(), name
        assert figure["min"] <= figure["median"] <= figure["max"]
    assert scenario["docs_per_s"]["median"] > 0
    assert scenario["docs_per_s"]["target"] == ">= 40"
    assert isinstance(scenario["docs_per_s"]["met"], bool)
    assert any(name.startswith("step_ms_p50.document.") for name in scenario)
    assert any("overhead per document" in note for note in scenario["about"]["notes"])
    lag = scenario["projection_lag_ms_p50"]["median"]
    assert 0 <= lag <= scenario["projection_lag_ms_max"]["median"]


def test_a_scenario_that_cannot_run_fails_the_run_and_says_why(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    unreachable = {"DOCFLOW_BENCH_POSTGRES_URL": "postgresql+psycopg://postgres@127.0.0.1:1/x"}
    done = run_bench(["--only", "api_load"], out, unreachable)
    assert done.returncode == 1, done.stdout[-3000:]
    error = json.loads(out.read_text())["scenarios"]["api_load"]["about"]["error"]
    assert "OperationalError" in error
