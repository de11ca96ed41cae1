"""API under load: a load generator in a process of its own (bench/harness/loadgen.py: async
httpx, a fixed number of connections) against one `docflow api` on PostgreSQL, run with
`API_WORKERS` processes (`docflow api --workers`; the API is stateless).

The mix: batch creations with 10 declared documents (202 with ten upload URLs; the main figure),
batch status reads and document listings of batches created earlier. No worker runs: no file is
uploaded, so there is nothing to process, and a worker would only take CPU from the API and the
generator on this two-core machine. The tenant is on the `enterprise` plan: no rate limit
refuses a request (each still reads its plan, and each batch counts its documents in the
tenant's month, as every request and batch does).

The load runs once (60 s; 3 s with --quick) and is cut into as many windows as repeats: the
median and spread are over the windows. The API process's RSS is read after a warm-up and at the
end; its growth is the difference. The CPU used by the API process and by the load generator
(in cores) shows which of them the machine's two cores were spent on. With several workers the
API's RSS and CPU are those of its whole process tree (the supervisor and its workers).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness.client import Api, create_tenant, declare
from bench.harness.documents import documents
from bench.harness.processes import BenchError, distributed
from bench.harness.scenario import Context, Outcome
from bench.harness.stats import at_least, at_most

FULL_S, QUICK_S = 60.0, 3.0
WARM_UP_S = 2.0
CONCURRENCY = 16
DOCUMENTS = 10
SEED_BATCHES = 20
MIX = {"create": 0.5, "status": 0.3, "list": 0.2}
# `docflow api --workers` (DOCFLOW_BENCH_API_WORKERS to compare): on two cores shared with the
# load generator and PostgreSQL, two processes use both cores where one is held back by its GIL.
API_WORKERS = int(os.environ.get("DOCFLOW_BENCH_API_WORKERS", "2"))
API_WORKERS_ENV = "DOCFLOW_API_WORKERS"
ROOT = Path(__file__).resolve().parents[2]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (from /proc)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            pids.extend(_tree(int(child)))
    return pids


def _proc_field(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tree_rss_mb(pid: int) -> float:
    """Resident memory of `pid` and its descendants, in MB."""
    return sum(_proc_field(p, "VmRSS") for p in _tree(pid))


def tree_cpu_s(pid: int) -> float:
    """User and system CPU time used so far by `pid` and its living descendants."""
    total = 0.0
    for p in _tree(pid):
        fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def load(config: dict[str, Any], seconds: float, windows: int) -> dict[str, Any]:
    """Run the load generator in its own process; its report, with `cpu_s`, the CPU time the
    generator used."""
    body = json.dumps({**config, "seconds": seconds, "windows": windows})
    cpu_before = _children_cpu_s()
    done = subprocess.run(
        [sys.executable, "-m", "bench.harness.loadgen"],
        input=body,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=seconds + 120,
    )
    if done.returncode != 0:
        raise BenchError(f"the load generator failed:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    report["cpu_s"] = _children_cpu_s() - cpu_before
    return report


def declare_figures(out: Outcome) -> None:
    f = out.figures
    f.declare("creations_per_s", "req/s", "batch creations (10 documents)", at_least(200))
    f.declare("status_reads_per_s", "req/s", "batch status reads")
    f.declare("listings_per_s", "req/s", "document listings")
    f.declare("requests_per_s", "req/s", "all requests")
    f.declare("p50_ms", "ms", "latency p50, all requests")
    f.declare("p95_ms", "ms", "latency p95, all requests")
    f.declare("p99_ms", "ms", "latency p99, all requests", at_most(100))
    f.declare("create_p99_ms", "ms", "latency p99, batch creations")
    f.declare("errors", "requests", "errors (transport, or an unexpected status)", at_most(0))
    f.declare("api_workers", "processes", "`docflow api --workers`")
    f.declare("api_cpu_cores", "cores", "CPU the API process used during the load")
    f.declare("loadgen_cpu_cores", "cores", "CPU the load generator used during the load")
    f.declare("rss_before_mb", "MB", "API process RSS after the warm-up")
    f.declare("rss_after_mb", "MB", "API process RSS at the end")
    f.declare("rss_growth_mb", "MB", "API process RSS growth during the load")


def run(ctx: Context, out: Outcome) -> None:
    seconds = QUICK_S if ctx.quick else FULL_S
    declare_figures(out)
    out.notes.append(
        f"{CONCURRENCY} connections, mix {MIX}, {seconds:.0f} s in {ctx.repeat} windows, "
        f"after a 2 s warm-up; one `docflow api --workers {API_WORKERS}`, no worker; the load "
        "generator, PostgreSQL and the API share the machine's cores"
    )
    sample = documents("pdf", count=1)
    with distributed(workers=0, env={API_WORKERS_ENV: str(API_WORKERS)}) as deployment:
        token = create_tenant(deployment, "Load")
        api = Api(deployment.base_url, token)
        try:
            project_id, workflow_id = api.invoice_workflow()
            body = declare(project_id, workflow_id, sample * DOCUMENTS)
            seeds = [
                api.call("POST", "/v1/batches", 202, json=body)["id"] for _ in range(SEED_BATCHES)
            ]
        finally:
            api.close()
        config = {
            "base_url": deployment.base_url,
            "token": token,
            "project_id": project_id,
            "workflow_id": workflow_id,
            "documents": DOCUMENTS,
            "seed_batches": seeds,
            "concurrency": CONCURRENCY,
            "mix": MIX,
        }
        load(config, WARM_UP_S, 1)
        rss_before = tree_rss_mb(deployment.api.pid)
        api_cpu_before = tree_cpu_s(deployment.api.pid)
        report = load(config, seconds, ctx.repeat)
        api_cpu = tree_cpu_s(deployment.api.pid) - api_cpu_before
        rss_after = tree_rss_mb(deployment.api.pid)
        deployment.check_alive()
    record(out, report, rss_before, rss_after)
    # Over the whole load (a little longer than `seconds`: the last requests finish after it).
    out.figures.add("api_workers", API_WORKERS)
    out.figures.add("api_cpu_cores", api_cpu / seconds)
    out.figures.add("loadgen_cpu_cores", report["cpu_s"] / seconds)


def record(out: Outcome, report: dict[str, Any], rss_before: float, rss_after: float) -> None:
    f = out.figures
    for window in report["windows"]:
        empty: dict[str, float] = {"per_s": 0.0, "errors": 0}
        f.add("creations_per_s", window.get("create", empty)["per_s"])
        f.add("status_reads_per_s", window.get("status", empty)["per_s"])
        f.add("listings_per_s", window.get("list", empty)["per_s"])
        every = window["all"]
        f.add("requests_per_s", every["per_s"])
        for name in ("p50_ms", "p95_ms", "p99_ms"):
            f.add(name, every.get(name, 0.0))
        f.add("create_p99_ms", window.get("create", {}).get("p99_ms", 0.0))
        f.add("errors", every["errors"])
    f.add("rss_before_mb", rss_before)
    f.add("rss_after_mb", rss_after)
    f.add("rss_growth_mb", rss_after - rss_before)
    if report["error_samples"]:
        out.details["error_samples"] = report["error_samples"]
