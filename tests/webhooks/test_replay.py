"""`docflow events replay --consumer webhooks` as an operator runs it: a process of its own, with
no durable runtime launched in it, hands archived events to the webhooks consumer; a worker (this
test's runtime) then delivers them to the endpoints that match now, with the event's id."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from docflow.events.models import OutboxEvent
from docflow.events.repository import OutboxRepository
from docflow.kit.clock import utcnow
from support.api_fixtures import post_project, post_workflow
from support.dbos_fixtures import DbosEnv

from .conftest import Receiver
from .helpers import add_endpoint, delivery_log


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


def test_the_cli_replays_archived_events_to_the_webhooks_consumer(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    env = webhook_env
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    since = utcnow() - timedelta(minutes=1)
    post_workflow(env.client, tenant, project["id"])  # docflow.workflow.published.v1
    _wait(lambda: _published(env, tenant.tenant_id, since), "the event was not published")
    (event,) = _published(env, tenant.tenant_id, since)
    # Published while the project had no endpoint: nobody was told. Subscribe now, then replay.
    endpoint = add_endpoint(env, tenant, project["id"], receiver.url)

    settings = env.settings
    command = os.environ | {
        "DOCFLOW_ENV": "test",
        "DOCFLOW_HOME": str(settings.home),
        "DOCFLOW_DATABASE_URL": settings.resolved_database_url(),
        "DOCFLOW_MIGRATION_DATABASE_URL": settings.resolved_migration_database_url(),
    }
    replay = [sys.executable, "-m", "docflow.cli", "events", "replay", "--consumer", "webhooks"]
    replay += ["--since", f"{since:%Y-%m-%dT%H:%M:%S}", "--tenant", tenant.tenant_id]
    done = subprocess.run(replay, env=command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "replayed 1 event(s) to webhooks" in done.stdout

    _wait(lambda: receiver.received, "the replayed event was not delivered")
    (received,) = receiver.received
    assert received.headers["webhook-id"] == event.id
    _wait(
        lambda: [d["status"] for d in delivery_log(env, tenant, endpoint["id"])] == ["DELIVERED"],
        "the delivery was not recorded",
    )
