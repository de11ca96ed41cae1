"""A delivery job that ends in ERROR (its attempt could not be recorded: the database refuses
the write) is not left PENDING: /readyz says so, the reconciler rewinds it once the database
takes writes again and it is delivered (so does a replay of its event); past its rewinds the
reconciler gives up on it, the delivery is DEAD with a dead letter of category `internal`, and
a redrive delivers it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from dbos import DBOS
from sqlalchemy import create_engine

from docflow.events import service as events_service
from docflow.events.service import INTERNAL
from docflow.reconciler import steps as reconciler_steps
from docflow.runtime.context import services
from docflow.tenancy import TenantContext
from docflow.webhooks import jobs
from docflow.webhooks.deliveries import CONSUMER_NAME
from support.api_fixtures import ok, post_workflow
from support.db_fixtures import on_postgres
from support.dbos_fixtures import DbosEnv

from .conftest import Receiver
from .helpers import delivery_log, finish, make_event, publish, setup_endpoint

_SQLITE_TRIGGER = (
    "CREATE TRIGGER refuse_attempts BEFORE INSERT ON webhook_attempts "
    "BEGIN SELECT RAISE(ABORT, 'attempts refused'); END"
)
_PG_TRIGGER = (
    "CREATE FUNCTION refuse_attempts() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'attempts refused'; END $$; "
    "CREATE TRIGGER refuse_attempts BEFORE INSERT ON webhook_attempts "
    "FOR EACH ROW EXECUTE FUNCTION refuse_attempts()"
)
_PG_DROP = "DROP TRIGGER refuse_attempts ON webhook_attempts; DROP FUNCTION refuse_attempts()"


class RefusedAttempts:
    """A trigger (installed by the tables' owner) that makes every write of an attempt fail
    with an error no retry can fix."""

    def __init__(self, env: DbosEnv) -> None:
        self.engine = create_engine(env.settings.resolved_migration_database_url())
        self.on = False

    def install(self) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(_PG_TRIGGER if on_postgres() else _SQLITE_TRIGGER)
        self.on = True

    def remove(self) -> None:
        if self.on:
            with self.engine.begin() as conn:
                for statement in (
                    _PG_DROP if on_postgres() else "DROP TRIGGER refuse_attempts"
                ).split("; "):
                    conn.exec_driver_sql(statement)
            self.on = False


@pytest.fixture
def refused(webhook_env: DbosEnv) -> Iterator[RefusedAttempts]:
    trigger = RefusedAttempts(webhook_env)
    try:
        yield trigger
    finally:
        trigger.remove()
        trigger.engine.dispose()


def _wait_status(workflow_id: str, status: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if DBOS.get_workflow_status(workflow_id).status == status:  # type: ignore[union-attr]
            return
        time.sleep(0.05)
    raise AssertionError(f"{workflow_id} is {DBOS.get_workflow_status(workflow_id)}")


def _readiness(env: DbosEnv) -> dict[str, str]:
    checks: dict[str, str] = ok(env.client.get("/readyz"), 200)["checks"]
    return checks


def _reconcile(max_rewinds: int) -> dict[str, int]:
    s = services()
    return reconciler_steps.reconcile(
        s.client,
        s.write_factory,
        max_rewinds=max_rewinds,
        downstream_lag_seconds=s.settings.downstream_lag_seconds,
    )


def test_a_failed_delivery_job_is_reported_then_rewound_and_delivered(
    webhook_env: DbosEnv, receiver: Receiver, refused: RefusedAttempts
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    refused.install()
    (job,) = publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id))
    _wait_status(job, "ERROR")
    (entry,) = delivery_log(webhook_env, tenant, endpoint["id"])
    assert (entry["status"], entry["attempts"]) == ("PENDING", [])
    assert _readiness(webhook_env)["workflows"] == "degraded"

    refused.remove()
    assert _reconcile(max_rewinds=3) == {"rewound": 1, "gave_up": 0}
    assert finish([job]) == ["DELIVERED"]
    (entry,) = delivery_log(webhook_env, tenant, endpoint["id"])
    assert entry["status"] == "DELIVERED"
    assert [(a["attempt"], a["status_code"]) for a in entry["attempts"]] == [(1, 200)]
    # Sent before the failed write, and again by the rewound attempt: one webhook-id.
    assert len(receiver.received) == 2
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    assert _readiness(webhook_env)["workflows"] == "ok"
    assert _reconcile(max_rewinds=3) == {"rewound": 0, "gave_up": 0}


def test_a_delivery_job_failing_past_its_rewinds_is_dead_lettered_and_redriven(
    webhook_env: DbosEnv, receiver: Receiver, refused: RefusedAttempts
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    refused.install()
    event = make_event(tenant.tenant_id, project_id)
    (job,) = publish(webhook_env, tenant, event)
    _wait_status(job, "ERROR")
    assert _reconcile(max_rewinds=1) == {"rewound": 1, "gave_up": 0}
    _wait_status(job, "ERROR")
    assert _reconcile(max_rewinds=1) == {"rewound": 0, "gave_up": 1}

    (entry,) = delivery_log(webhook_env, tenant, endpoint["id"])
    assert entry["status"] == "DEAD"
    # The error's kind (the driver's: IntegrityError, ProgrammingError), not its message.
    assert entry["last_error"].startswith("the workflow webhooks.deliver failed after 1 rewinds (")
    assert "refused" not in entry["last_error"]
    assert "RecordedError" not in entry["last_error"]  # the recorded type, not the wrapper's
    context = TenantContext(tenant.tenant_id)
    with webhook_env.session_factory() as session:
        (letter,) = events_service.list_dead_letters(
            session, context, consumer=CONSUMER_NAME, target=endpoint["id"]
        )
        letter_id = letter.id
        assert (letter.category, letter.event_id) == (INTERNAL, event["id"])
    assert _readiness(webhook_env)["workflows"] == "ok"
    assert _reconcile(max_rewinds=1) == {"rewound": 0, "gave_up": 0}

    refused.remove()
    with webhook_env.session_factory() as session:
        redriven = events_service.redrive(
            session,
            services().client,
            context,
            letter_id=letter_id,
            actor="ops",
            reason="the database takes writes again",
        )
        redrive_job = str(redriven.redrive_workflow_id)
        session.commit()
    assert finish([redrive_job]) == ["DELIVERED"]
    (entry,) = delivery_log(webhook_env, tenant, endpoint["id"])
    assert entry["status"] == "DELIVERED"
    assert [(a["attempt"], a["status_code"]) for a in entry["attempts"]] == [(1, 200)]
    assert {r.headers["webhook-id"] for r in receiver.received} == {event["id"]}


def test_a_replay_resumes_the_failed_delivery_job_of_an_event(
    webhook_env: DbosEnv, receiver: Receiver, refused: RefusedAttempts
) -> None:
    tenant, project_id, endpoint = setup_endpoint(
        webhook_env, receiver, event_types=["docflow.workflow.published.v1"]
    )
    refused.install()
    since = datetime.now(UTC) - timedelta(minutes=1)
    post_workflow(webhook_env.client, tenant, project_id)  # published through the outbox
    deadline = time.monotonic() + 30
    while not receiver.received:
        assert time.monotonic() < deadline, "the event was not sent"
        time.sleep(0.05)
    event_id = receiver.received[0].headers["webhook-id"]
    job = jobs.workflow_id(event_id, endpoint["id"])
    _wait_status(job, "ERROR")

    refused.remove()
    with webhook_env.session_factory() as session:
        replayed = events_service.replay(
            session,
            services().client,
            TenantContext(tenant.tenant_id),
            consumer=CONSUMER_NAME,
            since=since,
        )
        session.commit()
    assert replayed.events == 1
    assert events_service.resume_failed(services().client, replayed.jobs) == 1
    assert finish([job]) == ["DELIVERED"]
    (entry,) = delivery_log(webhook_env, tenant, endpoint["id"])
    assert (entry["status"], entry["event_id"]) == ("DELIVERED", event_id)
    assert {r.headers["webhook-id"] for r in receiver.received} == {event_id}


_PG_DROP_ONCE = (
    "CREATE SEQUENCE drop_once; "
    "CREATE FUNCTION drop_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF nextval('drop_once') = 1 THEN RAISE EXCEPTION "
    "'terminating connection due to administrator command' USING ERRCODE = '57P01'; END IF; "
    "RETURN NEW; END $$; "
    "CREATE TRIGGER drop_once BEFORE INSERT ON webhook_attempts "
    "FOR EACH ROW EXECUTE FUNCTION drop_once()"
)


@pytest.mark.skipif(not on_postgres(), reason="a PostgreSQL error code raised by a trigger")
def test_an_attempt_whose_write_hits_a_terminated_connection_is_retried(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    owner = create_engine(webhook_env.settings.resolved_migration_database_url())
    try:
        with owner.begin() as conn:
            conn.exec_driver_sql(_PG_DROP_ONCE)
        try:
            (job,) = publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id))
            assert finish([job]) == ["DELIVERED"]
        finally:
            with owner.begin() as conn:
                conn.exec_driver_sql(
                    "DROP TRIGGER drop_once ON webhook_attempts; DROP FUNCTION drop_once(); "
                    "DROP SEQUENCE drop_once"
                )
    finally:
        owner.dispose()
    (entry,) = delivery_log(webhook_env, tenant, endpoint["id"])
    assert entry["status"] == "DELIVERED"
    assert [(a["attempt"], a["status_code"]) for a in entry["attempts"]] == [(1, 200)]
    # The step ran twice (the first write failed after sending), with one webhook-id.
    assert len(receiver.received) == 2
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
