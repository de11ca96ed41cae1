"""`docflow events replay --consumer webhooks` as an operator runs it: a process of its own, with
no durable runtime launched in it, hands archived events to the webhooks consumer; a worker (this
test's runtime) then delivers them, with the event's id, to the endpoints live delivery would
send them to now: enabled, subscribed to the type, and created before the event. The replay
says how many endpoints it skipped and why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from docflow import tenancy
from docflow.db import bind_tenant
from docflow.events import service as events_service
from docflow.events.envelopes import BATCH_COMPLETED
from docflow.events.models import OutboxEvent
from docflow.events.repository import OutboxRepository
from docflow.kit.clock import utcnow
from docflow.runtime import context
from docflow.tenancy import TenantContext
from docflow.webhooks.jobs import workflow_id
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import DbosEnv

from .conftest import Receiver
from .helpers import add_endpoint, delivery_log, finish, make_event, publish, setup_endpoint


def _published(env: DbosEnv, tenant_id: str, since: datetime) -> list[OutboxEvent]:
    with env.session_factory() as session:
        return OutboxRepository(session, tenant_id).published_since(since, 10)


def _wait(condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(what)


def _jobs(env: DbosEnv, event_id: str, endpoint_id: str) -> list[str]:
    """The ids of the delivery jobs of (event, endpoint) the runtime knows."""
    client = env.client.app.state.dbos_client
    prefix = workflow_id(event_id, endpoint_id)
    return [w.workflow_id for w in client.list_workflows(workflow_id_prefix=prefix)]


def test_the_cli_replay_selects_endpoints_as_live_delivery_does_and_counts_the_skipped(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    env = webhook_env
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    headers = tenant.headers
    # `off` receives every type but is disabled, `batches` receives batch events only.
    off = add_endpoint(env, tenant, project["id"], receiver.url)
    path = f"/v1/webhooks/{off['id']}"
    ok(env.client.patch(path, json={"enabled": False}, headers=headers), 200)
    batches = add_endpoint(env, tenant, project["id"], receiver.url, event_types=[BATCH_COMPLETED])
    since = utcnow() - timedelta(minutes=1)
    post_workflow(env.client, tenant, project["id"])  # docflow.workflow.published.v1
    _wait(lambda: _published(env, tenant.tenant_id, since), "the event was not published")
    (event,) = _published(env, tenant.tenant_id, since)
    # Published while no endpoint received it. `off` is enabled again, `later` is created after
    # the event: the replay gives the event to `off`, never to `later` nor to `batches`.
    ok(env.client.patch(path, json={"enabled": True}, headers=headers), 200)
    later = add_endpoint(env, tenant, project["id"], receiver.url)

    settings = env.settings
    command = os.environ | {
        "DOCFLOW_ENV": "test",
        "DOCFLOW_HOME": str(settings.home),
        "DOCFLOW_DATABASE_URL": settings.resolved_database_url(),
        "DOCFLOW_MIGRATION_DATABASE_URL": settings.resolved_migration_database_url(),
    }
    replay = [sys.executable, "-m", "docflow.cli", "events", "replay", "--consumer", "webhooks"]
    replay += ["--since", f"{since:%Y-%m-%dT%H:%M:%S}", "--tenant", tenant.tenant_id, "--json"]
    done = subprocess.run(replay, env=command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "consumer": "webhooks",
        "events": 1,
        "resumed": 0,
        "not_handled": 0,
        "skipped": {"endpoint_created_after_event": 1, "type_not_subscribed": 1},
    }

    _wait(
        lambda: [d["status"] for d in delivery_log(env, tenant, off["id"])] == ["DELIVERED"],
        "the replayed event was not delivered",
    )
    # The consumer's fan-out enqueued every job of the event in one transaction: none for the
    # endpoints the replay skipped.
    assert _jobs(env, event.id, off["id"]) == [workflow_id(event.id, off["id"])]
    assert _jobs(env, event.id, later["id"]) == _jobs(env, event.id, batches["id"]) == []
    assert delivery_log(env, tenant, later["id"]) == delivery_log(env, tenant, batches["id"]) == []
    (received,) = receiver.received
    assert received.headers["webhook-id"] == event.id


def test_live_delivery_skips_an_endpoint_created_after_the_event(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    env = webhook_env
    tenant, project_id, _ = setup_endpoint(env, receiver)
    before = make_event(tenant.tenant_id, project_id, time=utcnow() - timedelta(hours=1))
    assert publish(env, tenant, before) == []
    after = make_event(tenant.tenant_id, project_id)
    assert finish(publish(env, tenant, after)) == ["DELIVERED"]
    assert [r.headers["webhook-id"] for r in receiver.received] == [after["id"]]


def test_the_replay_counts_events_no_endpoint_receives(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    env = webhook_env
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    since = utcnow() - timedelta(minutes=1)
    make_event(tenant.tenant_id, project["id"], time=utcnow() - timedelta(seconds=30))
    add_endpoint(env, tenant, project["id"], receiver.url)
    add_endpoint(env, tenant, project["id"], receiver.url, event_types=[BATCH_COMPLETED])
    client = env.client.app.state.dbos_client
    with context.services().write_session() as session, session.begin():
        bind_tenant(session, tenant.tenant_id)
        operator = TenantContext(tenant_id=tenancy.operator(tenant.tenant_id))
        replayed = events_service.replay(
            session, client, operator, consumer="webhooks", since=since
        )
    assert (replayed.events, replayed.jobs, replayed.not_handled) == (0, (), 1)
    assert replayed.skipped == {"endpoint_created_after_event": 1, "type_not_subscribed": 1}
