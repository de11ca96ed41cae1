"""Console sign-in throttling (per account and address, in the database) and sign-out ending
every copy of the session cookie."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from structlog.testing import capture_logs

from docflow.tenants import passwords, throttle
from docflow.tenants import service as tenants_service
from support.console_fixtures import PASSWORD, Console, csrf, sign_in


def _client(app: FastAPI, address: str) -> TestClient:
    return TestClient(
        app, base_url="https://testserver", follow_redirects=False, client=(address, 40000)
    )


class Clock:
    """The throttle's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(throttle, "utcnow", made)
    return made


def test_45_wrong_passwords_then_the_right_one_is_throttled(
    app: FastAPI, console: Console, clock: Clock
) -> None:
    email = console.emails["admin"]
    attacker = _client(app, "203.0.113.7")
    statuses = [sign_in(attacker, email, f"wrong-{i}").status_code for i in range(45)]
    assert statuses[: throttle.PAIR_LIMIT] == [401] * throttle.PAIR_LIMIT
    assert set(statuses[throttle.PAIR_LIMIT :]) == {429}
    with capture_logs() as logs:
        right = sign_in(attacker, email, PASSWORD)
    assert right.status_code == 429
    assert int(right.headers["Retry-After"]) == int(throttle.FIRST_LOCK.total_seconds())
    assert "too many failed sign-ins" in right.text
    assert "docflow_console=" not in right.headers.get("set-cookie", "")
    assert next(e for e in logs if e["event"] == "user.sign_in_throttled")["keys"] == ["pair"]
    # The owner, from another address, is not locked out by the attacker's failures.
    assert sign_in(_client(app, "198.51.100.9"), email, PASSWORD).status_code == 303


def test_a_lock_expires_and_grows_each_time_up_to_a_cap(
    app: FastAPI, console: Console, clock: Clock
) -> None:
    email = console.emails["viewer"]
    browser = _client(app, "203.0.113.8")
    waits = []
    for _ in range(7):
        for i in range(throttle.PAIR_LIMIT):
            assert sign_in(browser, email, f"wrong-{i}").status_code == 401
        locked = sign_in(browser, email, PASSWORD)
        assert locked.status_code == 429
        waits.append(int(locked.headers["Retry-After"]))
        clock.now += timedelta(seconds=waits[-1] - 1)
        assert sign_in(browser, email, PASSWORD).status_code == 429  # not quite yet
        clock.now += timedelta(seconds=1)
    assert waits == [30, 60, 120, 240, 480, 900, 900]
    assert sign_in(browser, email, PASSWORD).status_code == 303  # the lock expired
    browser.cookies.clear()
    # The success cleared the pair: five more failures lock it for the first length again.
    for i in range(throttle.PAIR_LIMIT):
        sign_in(browser, email, f"wrong-{i}")
    assert sign_in(browser, email, PASSWORD).headers["Retry-After"] == "30"


def test_one_address_spraying_accounts_is_locked_by_its_own_count(
    app: FastAPI, console: Console, clock: Clock
) -> None:
    sprayer = _client(app, "203.0.113.9")
    for i in range(throttle.ADDRESS_LIMIT):
        assert sign_in(sprayer, f"guess-{i}@example.com", "nope-nope").status_code == 401
    with capture_logs() as logs:
        assert sign_in(sprayer, console.emails["reviewer"], PASSWORD).status_code == 429
    assert [e["keys"] for e in logs if e["event"] == "user.sign_in_throttled"] == [["address"]]
    assert sign_in(_client(app, "192.0.2.1"), console.emails["reviewer"]).status_code == 303


def test_a_copied_session_cookie_stops_working_at_sign_out(app: FastAPI, console: Console) -> None:
    browser = _client(app, "192.0.2.2")
    assert sign_in(browser, console.emails["reviewer"]).status_code == 303
    copied = browser.cookies["docflow_console"]
    copy = _client(app, "192.0.2.66")
    copy.cookies.set("docflow_console", copied, path="/console")
    assert copy.get("/console/batches").status_code == 200  # the copy works while signed in
    token = csrf(browser.get("/console/batches").text)
    assert browser.post("/console/sign-out", data={"csrf_token": token}).status_code == 303
    refused = copy.get("/console/batches")
    assert refused.status_code == 303
    assert refused.headers["location"].startswith("/console/sign-in")
    # Signing in again works, and the old copy cannot sign the new session out.
    assert sign_in(browser, console.emails["reviewer"]).status_code == 303
    copy.cookies.set("docflow_console", copied, path="/console")
    assert copy.post("/console/sign-out", data={"csrf_token": token}).status_code == 303
    assert browser.get("/console/batches").status_code == 200


def test_a_new_password_ends_every_session_of_the_user(
    app: FastAPI, console: Console, session_factory: sessionmaker[Session]
) -> None:
    browser = _client(app, "192.0.2.3")
    assert sign_in(browser, console.emails["viewer"]).status_code == 303
    with session_factory.begin() as session:
        user = tenants_service.find_user_by_email(session, email=console.emails["viewer"])
        passwords.set_password(session, console.tenant_id, user_id=user.id, password=PASSWORD)
    assert browser.get("/console/batches").headers["location"].startswith("/console/sign-in")
