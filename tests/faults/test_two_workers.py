"""Two worker processes share the work: a 40-document batch processed once with both workers
doing some; a scheduled batch started at its time, once, with two schedulers; duplicated upload
deliveries and concurrent starts giving one execution (the multi-process variant of
tests/batches/test_flows.py's in-process test)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from docflow.kit.clock import utcnow
from support.api_fixtures import ok
from support.faults import (
    FaultEnv,
    Workers,
    batch_state,
    check_exactly_once,
    create_batch,
    executors_of_documents,
    upload,
    upload_all,
    wait_finished,
)

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

A, B = "pair-a", "pair-b"


@pytest.fixture(scope="module")
def pair(fault_env: FaultEnv) -> Iterator[Workers]:
    workers = fault_env.workers("pair")
    workers.start(A)
    workers.start(B)
    try:
        yield workers
    finally:
        workers.stop_all()


def test_two_workers_process_one_batch_each_document_once(
    fault_env: FaultEnv, pair: Workers
) -> None:
    submitted = create_batch(fault_env, 40)
    upload_all(fault_env, submitted)
    wait_finished(fault_env, submitted, pair, timeout=120)
    check_exactly_once(fault_env, submitted, pair)
    by_executor = executors_of_documents(fault_env, submitted)
    assert set(by_executor) == {A, B}, by_executor
    assert sum(by_executor.values()) == 40


def test_a_scheduled_batch_starts_at_its_time_once_with_two_schedulers(
    fault_env: FaultEnv, pair: Workers
) -> None:
    scheduled_for = utcnow() + timedelta(seconds=3)
    submitted = create_batch(fault_env, 3, scheduled_for=scheduled_for)
    upload_all(fault_env, submitted)
    assert batch_state(fault_env, submitted)["status"] == "CREATED"  # waits for its time
    # The due-batches schedule ticks every minute: at most a minute and a bit.
    wait_finished(fault_env, submitted, pair, timeout=90)
    check_exactly_once(fault_env, submitted, pair)
    started_at = datetime.fromisoformat(batch_state(fault_env, submitted)["started_at"])
    assert started_at >= scheduled_for
    # Both workers run the scheduler; each tick is one workflow whoever fires it, and the
    # batch was started by exactly one of them (check_exactly_once: one `batch.started`).
    ticks = fault_env.pg.scalar(
        "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE :p",
        p="sched-due-batches-%",
    )
    assert ticks >= 1, "the schedule fired"


def test_duplicate_deliveries_and_concurrent_starts_run_once(
    fault_env: FaultEnv, pair: Workers
) -> None:
    submitted = create_batch(fault_env, 6)
    count = len(submitted.files)
    start_url = f"/v1/batches/{submitted.batch_id}/start"
    headers = submitted.tenant.headers
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        # Every file delivered twice at once; the last one to land starts the batch...
        list(pool.map(lambda i: upload(fault_env, submitted, i % count), range(2 * count)))
        # ...then five start calls at once, racing each other and that execution. (A start
        # racing an upload in flight is tested in tests/batches/test_execution.py: which of
        # the two comes first decides whether the document is processed, so racing them here
        # would make the outcome a coin toss.)
        starts = [pool.submit(fault_env.client.post, start_url, headers=headers) for _ in range(5)]
        assert [s.result().status_code for s in starts] == [202] * 5
    wait_finished(fault_env, submitted, pair, timeout=60)
    check_exactly_once(fault_env, submitted, pair)
    state = batch_state(fault_env, submitted)
    assert state["uploaded_count"] == count
    again = fault_env.client.post(start_url, headers=headers)
    assert ok(again, 202)["status"] == "SUCCEEDED"
