"""A plan's `concurrent_documents` holds across two worker processes: each worker could run
three of the tenant's documents (four slots, three quarters for one tenant) and the queue four,
but the tenant never has more than two running at once anywhere, as DBOS's own record of each
document flow's run (claimed at, finished at) shows, and both workers took part."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from support.faults import (
    FaultEnv,
    Workers,
    check_exactly_once,
    create_batch,
    executors_of_documents,
    upload_all,
    wait_finished,
)

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

LIMIT = 2
# Milliseconds by which two processes' clocks (the claim's and the completion's) may disagree.
CLOCK_SLACK_MS = 5


@pytest.fixture(scope="module")
def capped(fault_env: FaultEnv) -> Iterator[Workers]:
    workers = fault_env.workers("capped")
    env = {
        "DOCFLOW_WORKER_CONCURRENCY": "4",
        "DOCFLOW_PLANS": json.dumps({"free": {"concurrent_documents": LIMIT}}),
    }
    workers.start("capped-a", **env)
    workers.start("capped-b", **env)
    try:
        yield workers
    finally:
        workers.stop_all()


def most_at_once(runs: list[tuple[int, int]]) -> int:
    """The most of the (start, end) intervals (ms) open at one moment; an end a few ms after a
    start that another process's clock stamped counts as before it."""
    moments = sorted(
        [(start, 1) for start, _ in runs] + [(end - CLOCK_SLACK_MS, -1) for _, end in runs]
    )
    open_now = most = 0
    for _, change in moments:
        open_now += change
        most = max(most, open_now)
    return most


def test_a_tenant_s_concurrent_documents_hold_across_two_workers(
    fault_env: FaultEnv, capped: Workers
) -> None:
    submitted = create_batch(fault_env, 24)
    upload_all(fault_env, submitted)
    wait_finished(fault_env, submitted, capped, timeout=120)
    check_exactly_once(fault_env, submitted, capped)
    rows = fault_env.pg.rows(
        "SELECT queue_name, started_at_epoch_ms, updated_at FROM dbos.workflow_status "
        "WHERE workflow_uuid = ANY(:ids)",
        ids=[f"doc:{d}" for d in submitted.document_ids],
    )
    assert {r[0] for r in rows} == {"documents:free"}
    runs = [(int(str(start)), int(str(end))) for _, start, end in rows]
    assert most_at_once(runs) == LIMIT
    assert len(executors_of_documents(fault_env, submitted)) == 2
