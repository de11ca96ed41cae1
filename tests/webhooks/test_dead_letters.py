"""A dead webhook delivery is a dead letter of consumer `webhooks` for its endpoint, written with
the delivery's DEAD status: listed by `GET /v1/dead-letters` and `docflow dead-letters list`
(by consumer, target, category, time), redriven by `docflow dead-letters redrive` to that
endpoint alone with the same `webhook-id`, recorded (who, when, why) and only once; the
redeliver request takes the same path; another tenant neither sees nor redrives it. Each
failure has its category (http_5xx, http_4xx, gone, connection, timeout)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import structlog
from dbos import DBOS
from typer.testing import CliRunner

from docflow.cli import app as cli_app
from docflow.events.envelopes import BATCH_COMPLETED
from docflow.kit.clock import utcnow
from docflow.runtime import context
from docflow.webhooks import signing, transport
from docflow.webhooks.jobs import enqueue, workflow_id
from support.api_fixtures import ApiTenant, ok, post_project, post_workflow
from support.dbos_fixtures import DbosEnv, Setup, invoice_pdf, submit, wait_terminal

from .conftest import Receiver
from .helpers import (
    add_endpoint,
    closed_port,
    delivery_log,
    finish,
    make_event,
    publish,
    setup_endpoint,
)

Cli = Callable[..., str]


@pytest.fixture
def cli(webhook_env: DbosEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    """`docflow ...` run in process against the module's database; its output."""
    settings = webhook_env.settings
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("DOCFLOW_MIGRATION_DATABASE_URL", settings.resolved_migration_database_url())
    monkeypatch.setenv("DOCFLOW_HOME", str(settings.home))
    monkeypatch.setenv("COLUMNS", "300")
    # The CLI points structlog at the runner's stderr, closed after each command while this
    # process's workers keep logging: keep them quiet meanwhile, and restore the setup after.
    monkeypatch.setenv("DOCFLOW_LOG_LEVEL", "CRITICAL")
    saved = structlog.get_config()
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(cli_app, list(args))
        assert result.exit_code == code, result.output
        return result.output

    try:
        yield run
    finally:
        structlog.configure(**saved)


def dead_letters(env: DbosEnv, tenant: ApiTenant, **filters: str) -> list[dict[str, Any]]:
    """The tenant's dead letters through the API."""
    response = env.client.get("/v1/dead-letters", params=filters, headers=tenant.headers)
    items: list[dict[str, Any]] = ok(response, 200)["items"]
    return items


def settled(env: DbosEnv, tenant: ApiTenant, endpoint_id: str, count: int) -> list[dict[str, Any]]:
    """The endpoint's deliveries once there are `count` and none is PENDING."""
    deadline = time.monotonic() + 60
    while True:
        items = delivery_log(env, tenant, endpoint_id)
        if len(items) == count and all(d["status"] != "PENDING" for d in items):
            return items
        assert time.monotonic() < deadline, items
        time.sleep(0.05)


def jobs(event_id: str, endpoint_id: str) -> list[str]:
    """The ids of every delivery job of (event, endpoint), the first one and any again."""
    prefix = workflow_id(event_id, endpoint_id)
    found = DBOS.list_workflows(workflow_id_prefix=prefix, load_input=False, load_output=False)
    return sorted(w.workflow_id for w in found)


def test_a_batch_with_the_receiver_down_dead_letters_its_delivery_then_the_cli_redrives_it_once(
    webhook_env: DbosEnv, receiver: Receiver, cli: Cli
) -> None:
    env = webhook_env
    receiver.default = 503
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    workflow = post_workflow(env.client, tenant, project["id"])
    setup = Setup(env, tenant, project["id"], workflow["id"])
    endpoint = add_endpoint(env, tenant, project["id"], receiver.url, event_types=[BATCH_COMPLETED])
    batch = submit(setup, [("inv.pdf", "application/pdf", invoice_pdf("INV-1", "10.00"))])
    assert wait_terminal(setup, batch["id"])["status"] == "SUCCEEDED"
    (dead,) = settled(env, tenant, endpoint["id"], 1)
    assert (dead["status"], len(dead["attempts"]), dead["last_error"]) == ("DEAD", 5, "HTTP 503")
    event_id = dead["event_id"]

    # The dead delivery is a dead letter of `webhooks` for the endpoint, with its category.
    (letter,) = dead_letters(env, tenant, consumer="webhooks")
    assert (letter["consumer"], letter["target"], letter["event_id"]) == (
        "webhooks",
        endpoint["id"],
        event_id,
    )
    assert (letter["event_type"], letter["category"], letter["error"]) == (
        BATCH_COMPLETED,
        "http_5xx",
        "HTTP 503",
    )
    assert letter["attempts"] == 5 and letter["redriven_at"] is None
    assert letter["envelope"]["id"] == event_id
    assert letter["envelope"]["data"]["batch_id"] == batch["id"]
    assert [x["id"] for x in dead_letters(env, tenant, category="http_5xx")] == [letter["id"]]
    assert [x["id"] for x in dead_letters(env, tenant, target=endpoint["id"])] == [letter["id"]]
    assert dead_letters(env, tenant, category="timeout") == []
    listing = ("dead-letters", "list", "--tenant", tenant.tenant_id, "--consumer", "webhooks")
    listed = cli(*listing, "--category", "http_5xx")
    assert letter["id"] in listed and endpoint["id"] in listed and event_id in listed
    other_category = cli(
        "dead-letters", "list", "--tenant", tenant.tenant_id, "--category", "connection"
    )
    assert letter["id"] not in other_category

    # Another tenant neither sees nor redrives it.
    other = env.tenant()
    assert dead_letters(env, other) == []
    assert dead_letters(env, other, consumer="webhooks") == []
    assert letter["id"] not in cli("dead-letters", "list", "--tenant", other.tenant_id)
    audit = ("--by", "intruder", "--reason", "taking over")
    refused = cli(
        "dead-letters", "redrive", letter["id"], "--tenant", other.tenant_id, *audit, code=1
    )
    assert "not found" in refused
    selected = cli(
        "dead-letters", "redrive", "--tenant", other.tenant_id, "--consumer", "webhooks", *audit
    )
    assert "0 redriven, 0 refused" in selected
    redeliver = f"/v1/webhooks/{endpoint['id']}/deliveries/{dead['id']}/redeliver"
    assert env.client.post(redeliver, headers=other.headers).status_code == 404
    assert jobs(event_id, endpoint["id"]) == [workflow_id(event_id, endpoint["id"])]

    # The receiver is back: one redrive by selection delivers once, with the same webhook-id.
    receiver.default = 200
    failed_sends = len(receiver.received)
    assert failed_sends == 5
    since = (utcnow().replace(microsecond=0) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S")
    selection = [*("--tenant", tenant.tenant_id, "--consumer", "webhooks", "--since", since)]
    selection += ["--category", "http_5xx"]
    out = cli("dead-letters", "redrive", *selection, "--by", "ops@example.com", "--reason", "fixed")
    assert f"redriven {letter['id']}" in out and "1 redriven, 0 refused" in out
    (delivered,) = settled(env, tenant, endpoint["id"], 1)
    assert delivered["status"] == "DELIVERED"
    assert [a["attempt"] for a in delivered["attempts"]] == [1, 2, 3, 4, 5, 6]
    (got,) = receiver.received[failed_sends:]
    assert got.headers["webhook-id"] == event_id
    assert json.loads(got.body) == letter["envelope"]
    assert signing.verify(endpoint["secret"], got.headers, got.body, now=time.time()) == event_id
    (audited,) = dead_letters(env, tenant, consumer="webhooks")
    assert (audited["redriven_by"], audited["redrive_reason"]) == ("ops@example.com", "fixed")
    assert audited["redriven_at"] is not None
    redrive_job = f"{workflow_id(event_id, endpoint['id'])}:redrive:{letter['id']}"
    assert DBOS.retrieve_workflow(redrive_job).get_result() == "DELIVERED"

    # A second redrive, by selection or by id, starts nothing: no job, no message.
    again = cli("dead-letters", "redrive", *selection, "--by", "ops", "--reason", "twice")
    assert "0 redriven, 0 refused" in again
    by_id = ("dead-letters", "redrive", letter["id"], "--tenant", tenant.tenant_id)
    assert "redriven already" in cli(*by_id, "--by", "ops", "--reason", "twice", code=1)
    assert env.client.post(redeliver, headers=tenant.headers).status_code == 409
    assert jobs(event_id, endpoint["id"]) == sorted(
        [workflow_id(event_id, endpoint["id"]), redrive_job]
    )
    assert len(receiver.received) == failed_sends + 1
    assert len(delivery_log(env, tenant, endpoint["id"])[0]["attempts"]) == 6
    (still,) = dead_letters(env, tenant, consumer="webhooks")
    assert (still["redriven_by"], still["redrive_reason"]) == ("ops@example.com", "fixed")


def test_the_redeliver_request_redrives_the_dead_letter_on_the_same_path(
    webhook_env: DbosEnv, receiver: Receiver, cli: Cli
) -> None:
    env = webhook_env
    tenant, project_id, endpoint = setup_endpoint(env, receiver)
    url = f"/v1/webhooks/{endpoint['id']}"
    down = f"http://127.0.0.1:{closed_port()}/hooks"
    ok(env.client.patch(url, json={"url": down}, headers=tenant.headers), 200)
    event = make_event(tenant.tenant_id, project_id)
    assert finish(publish(env, tenant, event)) == ["DEAD"]
    (letter,) = dead_letters(env, tenant, target=endpoint["id"])
    assert (letter["category"], letter["event_id"]) == ("connection", event["id"])
    assert "ConnectError" in letter["error"]

    ok(env.client.patch(url, json={"url": receiver.url}, headers=tenant.headers), 200)
    (dead,) = delivery_log(env, tenant, endpoint["id"])
    redeliver = f"{url}/deliveries/{dead['id']}/redeliver"
    assert ok(env.client.post(redeliver, headers=tenant.headers), 202)["status"] == "PENDING"
    (audited,) = dead_letters(env, tenant, target=endpoint["id"])
    assert audited["redriven_by"] == f"api key {tenant.key_id}"
    assert audited["redrive_reason"] == "redeliver requested through the API"
    redrive_job = f"{workflow_id(event['id'], endpoint['id'])}:redrive:{letter['id']}"
    assert finish([redrive_job]) == ["DELIVERED"]
    (got,) = receiver.received
    assert got.headers["webhook-id"] == event["id"]
    assert json.loads(got.body) == event

    assert env.client.post(redeliver, headers=tenant.headers).status_code == 409
    by_id = ("dead-letters", "redrive", letter["id"], "--tenant", tenant.tenant_id)
    assert "redriven already" in cli(*by_id, "--by", "ops", "--reason", "again", code=1)
    assert len(jobs(event["id"], endpoint["id"])) == 2
    assert len(receiver.received) == 1


def test_a_410_is_a_gone_dead_letter_refused_until_the_endpoint_is_enabled_again(
    webhook_env: DbosEnv, receiver: Receiver, cli: Cli
) -> None:
    env = webhook_env
    receiver.script = [410]
    tenant, project_id, endpoint = setup_endpoint(env, receiver)
    event = make_event(tenant.tenant_id, project_id)
    assert finish(publish(env, tenant, event)) == ["DEAD"]
    (letter,) = dead_letters(env, tenant, consumer="webhooks")
    assert (letter["category"], letter["error"], letter["attempts"]) == ("gone", "HTTP 410", 1)

    redrive = ("dead-letters", "redrive", letter["id"], "--tenant", tenant.tenant_id)
    refused = cli(*redrive, "--by", "ops", "--reason", "try", code=1)
    assert "endpoint is disabled" in refused
    (unchanged,) = dead_letters(env, tenant, consumer="webhooks")
    assert unchanged["redriven_at"] is None and unchanged["redriven_by"] is None
    assert len(jobs(event["id"], endpoint["id"])) == 1

    url = f"/v1/webhooks/{endpoint['id']}"
    ok(env.client.patch(url, json={"enabled": True}, headers=tenant.headers), 200)
    assert "redriven " in cli(*redrive, "--by", "ops", "--reason", "re-enabled")
    (delivered,) = settled(env, tenant, endpoint["id"], 1)
    assert delivered["status"] == "DELIVERED"
    assert [r.headers["webhook-id"] for r in receiver.received] == [event["id"]] * 2


def _dead_delivery(
    env: DbosEnv, receiver: Receiver, *, created_after: bool = False
) -> tuple[ApiTenant, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(tenant, endpoint, event, its dead letter): the endpoint's receiver was down for the
    event's delivery, and is back. With `created_after`, the event occurred before the
    endpoint existed and its delivery job was started all the same (as replays once did)."""
    tenant, project_id, endpoint = setup_endpoint(env, receiver)
    url = f"/v1/webhooks/{endpoint['id']}"
    down = f"http://127.0.0.1:{closed_port()}/hooks"
    ok(env.client.patch(url, json={"url": down}, headers=tenant.headers), 200)
    if created_after:
        event = make_event(tenant.tenant_id, project_id, time=utcnow() - timedelta(hours=1))
        job = workflow_id(event["id"], endpoint["id"])
        with context.services().write_session() as session, session.begin():
            client = env.client.app.state.dbos_client
            enqueue(
                session,
                client,
                tenant.tenant_id,
                endpoint_id=endpoint["id"],
                event=event,
                job_id=job,
            )
        started = [job]
    else:
        event = make_event(tenant.tenant_id, project_id)
        started = publish(env, tenant, event)
    assert finish(started) == ["DEAD"]
    ok(env.client.patch(url, json={"url": receiver.url}, headers=tenant.headers), 200)
    (letter,) = dead_letters(env, tenant, target=endpoint["id"])
    return tenant, endpoint, event, letter


def _refused_everywhere(
    env: DbosEnv, cli: Cli, tenant: ApiTenant, endpoint: dict[str, Any], reason: str, why: str
) -> None:
    """The endpoint's dead letter is refused by a redrive by selection, by id and by the
    redeliver request, each naming why; nothing is started or recorded."""
    (letter,) = dead_letters(env, tenant, target=endpoint["id"])
    audit = ("--by", "ops", "--reason", "try")
    selection = ("--tenant", tenant.tenant_id, "--consumer", "webhooks")
    out = cli("dead-letters", "redrive", *selection, *audit, code=1)
    assert f"refused {letter['id']}: {why}" in out and "0 redriven, 1 refused" in out
    by_id = cli(
        "dead-letters", "redrive", letter["id"], "--tenant", tenant.tenant_id, *audit, code=1
    )
    assert why in by_id
    (dead,) = delivery_log(env, tenant, endpoint["id"])
    redeliver = f"/v1/webhooks/{endpoint['id']}/deliveries/{dead['id']}/redeliver"
    answer = env.client.post(redeliver, headers=tenant.headers)
    assert answer.status_code == 409
    assert answer.json()["reason"] == reason and why in answer.json()["detail"]
    (unchanged,) = dead_letters(env, tenant, target=endpoint["id"])
    assert unchanged["redriven_at"] is None
    assert jobs(letter["event_id"], endpoint["id"]) == [
        workflow_id(letter["event_id"], endpoint["id"])
    ]
    assert delivery_log(env, tenant, endpoint["id"])[0]["status"] == "DEAD"


def test_a_redrive_is_refused_when_the_endpoint_no_longer_subscribes_to_the_event_s_type(
    webhook_env: DbosEnv, receiver: Receiver, cli: Cli
) -> None:
    env = webhook_env
    tenant, endpoint, event, letter = _dead_delivery(env, receiver)
    url = f"/v1/webhooks/{endpoint['id']}"
    filtered = {"event_types": [BATCH_COMPLETED]}
    ok(env.client.patch(url, json=filtered, headers=tenant.headers), 200)
    why = "the endpoint does not subscribe to the event's type"
    _refused_everywhere(env, cli, tenant, endpoint, "type_not_subscribed", why)
    assert receiver.received == []

    # Subscribed again: the same letter is redriven and delivered.
    ok(env.client.patch(url, json={"event_types": []}, headers=tenant.headers), 200)
    (dead,) = delivery_log(env, tenant, endpoint["id"])
    redeliver = f"{url}/deliveries/{dead['id']}/redeliver"
    assert ok(env.client.post(redeliver, headers=tenant.headers), 202)["status"] == "PENDING"
    redrive_job = f"{workflow_id(event['id'], endpoint['id'])}:redrive:{letter['id']}"
    assert finish([redrive_job]) == ["DELIVERED"]
    assert [r.headers["webhook-id"] for r in receiver.received] == [event["id"]]


def test_a_redrive_is_refused_for_an_endpoint_created_after_the_event(
    webhook_env: DbosEnv, receiver: Receiver, cli: Cli
) -> None:
    env = webhook_env
    tenant, endpoint, _, _ = _dead_delivery(env, receiver, created_after=True)
    why = "the endpoint was created after the event"
    _refused_everywhere(env, cli, tenant, endpoint, "endpoint_created_after_event", why)
    assert receiver.received == []


def test_each_failure_has_its_category(receiver: Receiver) -> None:
    receiver.script = [404, 503, 410, 302]
    body, headers = b"{}", {"webhook-id": "evt_1"}
    categories = [
        transport.post(receiver.url, body, headers, timeout=5, allow_private=True).category
        for _ in range(4)
    ]
    assert categories == ["http_4xx", "http_5xx", "gone", "http_3xx"]
    down = f"http://127.0.0.1:{closed_port()}/x"
    refused = transport.post(down, body, headers, timeout=5, allow_private=True)
    assert (refused.status_code, refused.category) == (None, "connection")
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        silent_url = f"http://127.0.0.1:{port}/x"
        slow = transport.post(silent_url, body, headers, timeout=0.3, allow_private=True)
    assert (slow.status_code, slow.category) == (None, "timeout")
    assert "Timeout" in (slow.error or "")
