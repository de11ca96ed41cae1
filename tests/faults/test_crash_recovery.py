"""A worker SIGKILLed at random points while a 30-document batch runs, restarted each time with
the same executor id: the batch finishes once, every document counted once."""

from __future__ import annotations

import random
import time

import pytest

from support.faults import (
    FaultEnv,
    check_exactly_once,
    create_batch,
    done_count,
    upload_all,
    wait_finished,
)
from support.process_fixtures import wait_for

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

EXECUTOR = "crash-worker"


def test_a_worker_killed_three_times_finishes_its_batch_exactly_once(fault_env: FaultEnv) -> None:
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    workers = fault_env.workers("crash")
    workers.start(EXECUTOR)
    try:
        submitted = create_batch(fault_env, 30)
        upload_all(fault_env, submitted)  # the last upload starts the batch
        kills = []
        for threshold in (rng.randint(2, 6), rng.randint(10, 14), rng.randint(18, 22)):
            wait_for(
                lambda t=threshold: done_count(fault_env, submitted) >= t,
                timeout=60,
                what=f"{threshold} documents done (seed {seed}; log: {workers.log})",
                interval=0.02,
            )
            time.sleep(rng.uniform(0, 0.03))  # land anywhere in a step, not just after one
            kills.append(done_count(fault_env, submitted))
            workers.kill(EXECUTOR)
            workers.start(EXECUTOR)
        wait_finished(fault_env, submitted, workers, timeout=90)
    finally:
        workers.stop_all()
    assert len(kills) == 3 and kills[-1] < 30, f"killed at {kills} (seed {seed})"
    check_exactly_once(fault_env, submitted, workers, killed=True)
    assert workers.events("worker.started", executor_id=EXECUTOR) == 4
