"""Failed sign-ins recorded at the same moment by several API processes (threads here, each
with its own connection) all count: the counters live in the database, their rows locked while
counted, and a row two of them make at once is made once."""

from __future__ import annotations

import secrets
import threading

from sqlalchemy import Engine

from docflow import db
from docflow.tenants import throttle
from docflow.tenants.repository import read_throttles

RACERS = throttle.PAIR_LIMIT - 1


def test_concurrent_failures_all_count_then_lock(engine: Engine) -> None:
    factory = db.make_write_session_factory(engine)
    attempt = throttle.Attempt(
        account=f"race-{secrets.token_hex(4)}@example.com",
        address=f"10.9.{secrets.randbelow(250)}.1",
    )
    start = threading.Barrier(RACERS)
    errors: list[BaseException] = []

    def fail() -> None:
        try:
            start.wait(timeout=10)
            with factory.begin() as session:
                throttle.record_failure(session, attempt)
        except BaseException as error:  # reported below
            errors.append(error)

    racers = [threading.Thread(target=fail) for _ in range(RACERS)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=60)
    assert errors == []
    with factory() as session:
        rows = read_throttles(session, list(attempt.limits()))
        assert sorted(row.failures for row in rows) == [RACERS] * 3
        assert all(row.locked_until is None for row in rows)
    with factory.begin() as session:
        throttle.record_failure(session, attempt)  # the limit's own failure locks the pair
    with factory() as session:
        try:
            throttle.check(session, attempt)
        except throttle.SignInThrottled as locked:
            assert locked.headers["Retry-After"] == "30"
        else:
            raise AssertionError("the pair is not locked after its limit of failures")
