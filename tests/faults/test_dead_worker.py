"""One of two workers is SIGKILLed mid-batch and never comes back: the survivor sees its
heartbeat go stale, claims it, recovers its pending workflows (the documents it was running)
and finishes the whole batch, each document once, its completion included."""

from __future__ import annotations

import pytest

from support.faults import (
    EXECUTOR_TIMEOUT_SECONDS,
    FaultEnv,
    check_exactly_once,
    create_batch,
    done_count,
    executors_of_documents,
    upload_all,
    wait_finished,
)
from support.process_fixtures import wait_for

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]


def test_the_survivor_finishes_the_batch_of_a_dead_worker(fault_env: FaultEnv) -> None:
    workers = fault_env.workers("dead")
    workers.start("worker-1")
    workers.start("worker-2")
    # The worker to kill is whichever began the batch's execution.
    try:
        submitted = create_batch(fault_env, 40)
        upload_all(fault_env, submitted)
        owner_query = "SELECT executor_id FROM dbos.workflow_status WHERE workflow_uuid = :b"
        wait_for(
            lambda: (
                fault_env.pg.scalar(owner_query, b=submitted.batch_id) is not None
                and done_count(fault_env, submitted) >= 6
            ),
            timeout=60,
            what=f"the batch to be under way (log: {workers.log})",
            interval=0.05,
        )
        doomed = str(fault_env.pg.scalar(owner_query, b=submitted.batch_id))
        survivor = ({"worker-1", "worker-2"} - {doomed}).pop()
        workers.kill(doomed)
        assert done_count(fault_env, submitted) < 40, "the batch finished before the kill"
        wait_finished(fault_env, submitted, workers, timeout=60 + EXECUTOR_TIMEOUT_SECONDS)
        # When the killed worker held no document at that moment, the survivor can finish the
        # batch before the dead heartbeat is stale: its claim comes after, so wait for it.
        wait_for(
            lambda: workers.events("executor.recovered", dead_executor=doomed) > 0,
            timeout=EXECUTOR_TIMEOUT_SECONDS + 30,
            what=f"the survivor to claim the dead worker (log: {workers.log})",
        )
    finally:
        workers.stop_all()
    check_exactly_once(fault_env, submitted, workers, killed=True)
    assert workers.events("executor.recovered", executor_id=survivor, dead_executor=doomed) == 1
    assert fault_env.pg.scalar(owner_query, b=f"complete:{submitted.batch_id}") == survivor
    assert survivor in executors_of_documents(fault_env, submitted)
