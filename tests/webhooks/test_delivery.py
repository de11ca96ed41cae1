"""Delivery through the real durable runtime to a real HTTP receiver on 127.0.0.1: the body
exactly as signed, retries with the same `webhook-id`, delivery on the 4th attempt, dead after
the last, 410 disabling the endpoint, one workflow per (event, endpoint), and the delivery log."""

from __future__ import annotations

import json
import time
from datetime import datetime

from docflow.webhooks import jobs, signing
from docflow.webhooks.repository import WebhookRepository
from support.api_fixtures import ok, post_workflow
from support.dbos_fixtures import DbosEnv

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


def test_the_receiver_gets_the_event_exactly_as_signed(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    event = make_event(tenant.tenant_id, project_id)
    started = publish(webhook_env, tenant, event)
    assert started == [f"webhook:{event['id']}:{endpoint['id']}"]
    assert finish(started) == ["DELIVERED"]

    [got] = receiver.received
    assert json.loads(got.body) == event
    assert got.headers["webhook-id"] == event["id"]
    assert got.headers["content-type"] == "application/json"
    assert signing.verify(endpoint["secret"], got.headers, got.body, now=time.time()) == event["id"]
    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert (delivery["status"], delivery["event_id"]) == ("DELIVERED", event["id"])
    [attempt] = delivery["attempts"]
    assert (attempt["attempt"], attempt["status_code"], attempt["error"]) == (1, 200, None)
    assert attempt["latency_ms"] >= 0


def test_down_for_three_attempts_then_delivered_on_the_fourth_with_one_webhook_id(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    receiver.script = [503, 500, 502]
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    event = make_event(tenant.tenant_id, project_id)
    assert finish(publish(webhook_env, tenant, event)) == ["DELIVERED"]

    assert len(receiver.received) == 4
    assert {r.headers["webhook-id"] for r in receiver.received} == {event["id"]}
    assert {r.body for r in receiver.received} == {receiver.received[0].body}
    for got in receiver.received:
        signing.verify(endpoint["secret"], got.headers, got.body, now=time.time())
    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert delivery["status"] == "DELIVERED"
    codes = [(a["attempt"], a["status_code"]) for a in delivery["attempts"]]
    assert codes == [(1, 503), (2, 500), (3, 502), (4, 200)]
    assert all(a["next_retry_at"] for a in delivery["attempts"][:3])
    assert delivery["attempts"][3]["next_retry_at"] is None


def test_down_for_every_attempt_is_dead_then_redelivered_once_when_back(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    down = f"http://127.0.0.1:{closed_port()}/hooks"
    patched = webhook_env.client.patch(
        f"/v1/webhooks/{endpoint['id']}", json={"url": down}, headers=tenant.headers
    )
    ok(patched, 200)
    event = make_event(tenant.tenant_id, project_id)
    assert finish(publish(webhook_env, tenant, event)) == ["DEAD"]

    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert delivery["status"] == "DEAD"
    assert [a["attempt"] for a in delivery["attempts"]] == [1, 2, 3, 4, 5]
    assert all(a["status_code"] is None for a in delivery["attempts"])
    assert "ConnectError" in delivery["last_error"]
    assert delivery["next_attempt_at"] is None
    still = ok(
        webhook_env.client.get(f"/v1/webhooks/{endpoint['id']}", headers=tenant.headers), 200
    )
    assert still["enabled"] is True

    # The receiver is back: a redelivery delivers once, same webhook-id, attempts continuing.
    url = f"/v1/webhooks/{endpoint['id']}"
    ok(webhook_env.client.patch(url, json={"url": receiver.url}, headers=tenant.headers), 200)
    redeliver = f"{url}/deliveries/{delivery['id']}/redeliver"
    accepted = ok(webhook_env.client.post(redeliver, headers=tenant.headers), 202)
    assert accepted["status"] == "PENDING"
    assert webhook_env.client.post(redeliver, headers=tenant.headers).status_code == 409
    deadline = time.monotonic() + 20
    while delivery_log(webhook_env, tenant, endpoint["id"])[0]["status"] == "PENDING":
        assert time.monotonic() < deadline, "the redelivery did not finish"
        time.sleep(0.05)
    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert delivery["status"] == "DELIVERED"
    assert [a["attempt"] for a in delivery["attempts"]] == [1, 2, 3, 4, 5, 6]
    [got] = receiver.received
    assert got.headers["webhook-id"] == event["id"]
    assert json.loads(got.body) == event
    assert webhook_env.client.post(redeliver, headers=tenant.headers).status_code == 409


def test_410_disables_the_endpoint_and_later_events_skip_it(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    receiver.script = [410]
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    assert finish(publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id))) == [
        "DEAD"
    ]
    assert len(receiver.received) == 1
    url = f"/v1/webhooks/{endpoint['id']}"
    disabled = ok(webhook_env.client.get(url, headers=tenant.headers), 200)
    assert disabled["enabled"] is False
    assert "410" in disabled["disabled_reason"]
    assert publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id)) == []

    enabled = ok(webhook_env.client.patch(url, json={"enabled": True}, headers=tenant.headers), 200)
    assert (enabled["enabled"], enabled["disabled_reason"]) == (True, None)
    assert finish(publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id))) == [
        "DELIVERED"
    ]


def test_one_delivery_per_event_and_endpoint_and_the_type_filter(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, every = setup_endpoint(webhook_env, receiver)
    batches_only = add_endpoint(
        webhook_env, tenant, project_id, receiver.url, event_types=["docflow.batch.completed.v1"]
    )
    event = make_event(tenant.tenant_id, project_id)
    first = publish(webhook_env, tenant, event)
    again = publish(webhook_env, tenant, event)
    assert first == again == [jobs.workflow_id(event["id"], every["id"])]
    assert finish(first) == ["DELIVERED"]
    assert len(receiver.received) == 1
    assert delivery_log(webhook_env, tenant, batches_only["id"]) == []

    batch_event = make_event(tenant.tenant_id, project_id, "docflow.batch.completed.v1")
    assert sorted(finish(publish(webhook_env, tenant, batch_event))) == ["DELIVERED"] * 2


def test_a_failing_endpoint_does_not_hold_up_another(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, good = setup_endpoint(webhook_env, receiver)
    bad = add_endpoint(webhook_env, tenant, project_id, f"http://127.0.0.1:{closed_port()}/x")
    event = make_event(tenant.tenant_id, project_id)
    started = publish(webhook_env, tenant, event)
    assert sorted(finish(started)) == ["DEAD", "DELIVERED"]
    # The good endpoint was served while the bad one was still retrying: its one attempt came
    # before the bad endpoint's last (read from the delivery logs, not from timing the test).
    (good_delivery,) = delivery_log(webhook_env, tenant, good["id"])
    (bad_delivery,) = delivery_log(webhook_env, tenant, bad["id"])
    (good_attempt,) = good_delivery["attempts"]
    bad_attempts = bad_delivery["attempts"]
    assert len(bad_attempts) == webhook_env.settings.webhook_max_attempts
    when = datetime.fromisoformat
    assert when(good_attempt["attempted_at"]) < max(when(a["attempted_at"]) for a in bad_attempts)


def test_a_deleted_endpoint_skips_its_pending_delivery(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    receiver.default = 503
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    started = publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id))
    deadline = time.monotonic() + 10
    while not receiver.received and time.monotonic() < deadline:
        time.sleep(0.01)
    url = f"/v1/webhooks/{endpoint['id']}"
    assert webhook_env.client.delete(url, headers=tenant.headers).status_code == 204
    assert finish(started) == ["SKIPPED"]
    assert 1 <= len(receiver.received) < 5


def test_a_published_event_reaches_the_endpoint_through_the_outbox(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, endpoint = setup_endpoint(
        webhook_env, receiver, event_types=["docflow.workflow.published.v1"]
    )
    workflow = post_workflow(webhook_env.client, tenant, project_id)
    deadline = time.monotonic() + 30
    while not delivery_log(webhook_env, tenant, endpoint["id"]) or (
        delivery_log(webhook_env, tenant, endpoint["id"])[0]["status"] == "PENDING"
    ):
        assert time.monotonic() < deadline, "the event was not delivered"
        time.sleep(0.05)
    [got] = receiver.received
    event = json.loads(got.body)
    assert (event["type"], event["specversion"]) == ("docflow.workflow.published.v1", "1.0")
    assert event["data"]["workflow_id"] == workflow["id"]
    assert event["data"]["tenant_id"] == tenant.tenant_id
    assert signing.verify(endpoint["secret"], got.headers, got.body, now=time.time()) == event["id"]
    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert (delivery["status"], delivery["event_id"]) == ("DELIVERED", event["id"])


def test_a_secret_sealed_under_another_key_is_logged_not_sent(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    with webhook_env.session_factory() as session:
        row = WebhookRepository(session, tenant.tenant_id).endpoint(endpoint["id"])
        assert row is not None
        row.secret_sealed = signing.seal(endpoint["secret"], "a previous signing secret")
        session.commit()
    assert finish(publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id))) == [
        "DEAD"
    ]
    assert receiver.received == []
    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert "cannot be unsealed" in delivery["last_error"]
    assert len(delivery["attempts"]) == 5
