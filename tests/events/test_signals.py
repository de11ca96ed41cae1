"""Readiness signals (dead letters, oldest unpublished event) and the retention sweep."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from dbos import DBOS
from fastapi import FastAPI
from fastapi.testclient import TestClient

from docflow.events import envelopes, steps
from docflow.events.health import events_check, read_signals
from docflow.events.models import DeadLetter, OutboxEvent
from docflow.events.outbox import PUBLISH_QUEUE
from docflow.events.repository import OutboxRepository
from docflow.http.health import add_check
from docflow.http.health import router as health_router
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.readiness import Degraded
from docflow.runtime.context import services
from support.dbos_fixtures import DbosEnv, Setup, dbos_env, setup  # noqa: F401


def _event(tenant_id: str, *, age: timedelta, published: bool) -> OutboxEvent:
    when = utcnow() - age
    return OutboxEvent(
        tenant_id=tenant_id,
        id=ids.new_id("evt"),
        type=envelopes.WORKFLOW_PUBLISHED,
        source=envelopes.source_for(tenant_id),
        subject="workflows/wfl_x",
        data={"tenant_id": tenant_id},
        occurred_at=when,
        published_at=when if published else None,
    )


def settle(timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while DBOS.list_queued_workflows(queue_name=PUBLISH_QUEUE):
        assert time.monotonic() < deadline, "publisher runs still queued"
        time.sleep(0.05)


def test_old_unpublished_events_and_dead_letters_make_readiness_degraded(
    setup: Setup,  # noqa: F811
) -> None:
    env, tenant_id = setup.env, setup.tenant.tenant_id
    strict = env.settings.model_copy(
        update={"events_ready_max_dead_letters": 0, "events_ready_max_unpublished_seconds": 30}
    )
    settle()  # no publisher run pending that could publish the rows written below
    # Quiet: nothing over the thresholds (the default ones).
    events_check(env.engine, env.settings)()
    with services().write_session() as session, session.begin():
        OutboxRepository(session, tenant_id)
        stale = _event(tenant_id, age=timedelta(minutes=5), published=False)
        session.add(stale)
    signals = read_signals(env.engine)
    assert signals.oldest_unpublished_seconds >= 300
    with pytest.raises(Degraded, match="unpublished"):
        events_check(env.engine, strict)()
    with services().write_session() as session, session.begin():
        event = OutboxRepository(session, tenant_id).get(stale.id)
        assert event is not None
        event.published_at = utcnow()  # what the publisher's next tick would do
        session.add(
            DeadLetter(
                tenant_id=tenant_id,
                id=ids.new_id("dlq"),
                consumer="test",
                event_id=stale.id,
                event_type=stale.type,
                envelope={},
                error="boom",
                category="handler_error",
                attempts=1,
                created_at=utcnow(),
            )
        )
    assert read_signals(env.engine).dead_letters >= 1
    with pytest.raises(Degraded, match="dead letters"):
        events_check(env.engine, strict)()


def test_readyz_answers_200_degraded_when_a_check_is_degraded() -> None:
    app = FastAPI()
    app.state.readiness_checks = {}
    app.include_router(health_router)
    add_check(app, "fine", lambda: None)

    def over() -> None:
        raise Degraded("3 dead letters")

    add_check(app, "events", over)
    response = TestClient(app).get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "degraded", "checks": {"fine": "ok", "events": "degraded"}}

    def down() -> None:
        raise OSError("no database")

    add_check(app, "database", down)
    assert TestClient(app).get("/readyz").status_code == 503


def test_the_sweep_deletes_only_published_events_older_than_the_retention(
    setup: Setup,  # noqa: F811
) -> None:
    tenant_id = setup.tenant.tenant_id
    old = _event(tenant_id, age=timedelta(days=20), published=True)
    old_unpublished = _event(tenant_id, age=timedelta(days=20), published=False)
    recent = _event(tenant_id, age=timedelta(days=2), published=True)
    settle()
    with services().write_session() as session, session.begin():
        OutboxRepository(session, tenant_id)
        session.add_all([old, old_unpublished, recent])
    swept = steps.sweep_all(services().write_factory, retention_days=14)
    assert swept[0] >= 1
    with setup.env.session_factory() as session:
        repo = OutboxRepository(session, tenant_id)
        assert repo.get(old.id) is None
        assert repo.get(old_unpublished.id) is not None and repo.get(recent.id) is not None
    with services().write_session() as session, session.begin():
        # Leave nothing unpublished behind for the other tests' readiness.
        event = OutboxRepository(session, tenant_id).get(old_unpublished.id)
        assert event is not None
        session.delete(event)
