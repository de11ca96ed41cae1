"""Metrics of real processes on PostgreSQL: a `docflow worker` serves its own `/metrics` on
`DOCFLOW_METRICS_PORT`, and `docflow api --workers 2` answers `/metrics` for both of its
processes (prometheus-client's multiprocess folder)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.faults import (
    FaultEnv,
    create_batch,
    fault_env,
    fresh_postgres,
    upload_all,
    wait_finished,
)
from support.process_fixtures import free_port, spawn, stop, wait_for

__all__ = ["fault_env", "fresh_postgres"]

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(url, timeout=5.0).raise_for_status().text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def reachable(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_worker_serves_its_documents_steps_and_the_queue_gauges(fault_env: FaultEnv) -> None:
    port = free_port()
    workers = fault_env.workers("metrics")
    workers.start("metrics-1", DOCFLOW_METRICS_PORT=str(port))
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_for(lambda: reachable(url), timeout=30, what=f"the worker's metrics ({workers.log})")
        submitted = create_batch(fault_env, 3)
        upload_all(fault_env, submitted)
        wait_finished(fault_env, submitted, workers, timeout=90)
        found = scrape(url)
    finally:
        workers.stop_all()
    documents = found.get(("docflow_documents_total", (("code", ""), ("status", "SUCCEEDED"))))
    assert documents == 3, workers.tail()
    extract = (("outcome", "ok"), ("step", "document.extract"))
    assert found[("docflow_step_duration_seconds_count", extract)] == 3
    # The installation's gauges, read as DBOS's own role: the application role may not.
    assert found[("docflow_metrics_source_up", (("source", "queues"),))] == 1
    assert found[("docflow_metrics_source_up", (("source", "events"),))] == 1


def test_api_workers_answer_for_every_process(fault_env: FaultEnv, tmp_path: Path) -> None:
    port = free_port()
    env = {**fault_env.worker_env, "DOCFLOW_HOME": str(tmp_path), "DOCFLOW_API_WORKERS": "2"}
    log = tmp_path / "api.log"
    process = spawn(
        ["-c", "from docflow.cli import app; app()", "api", "--port", str(port)], env, log
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: reachable(f"{base}/healthz") or process.poll() is not None,
            timeout=90,
            what="the API to answer",
        )
        assert process.poll() is None, log.read_text()[-3000:]
        # New connections spread over both processes; each scrape must still count them all.
        for _ in range(40):
            with httpx.Client() as client:
                assert client.get(f"{base}/healthz").status_code == 200
        key = (
            "docflow_http_requests_total",
            (("method", "GET"), ("route", "/healthz"), ("status", "200")),
        )
        counts = [scrape(f"{base}/metrics").get(key, 0.0) for _ in range(6)]
    finally:
        stop(process, timeout=30)
    assert all(count >= 40 for count in counts), counts
    assert (tmp_path / "metrics").is_dir()
