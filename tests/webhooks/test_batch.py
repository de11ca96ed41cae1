"""A real batch through the real runtime: every document and batch event reaches the endpoint
signed; a receiver down for every attempt leaves the deliveries DEAD with the last error while
the batch itself SUCCEEDED, and redelivering them once it is back delivers each exactly once."""

from __future__ import annotations

import json
import time
from typing import Any

from docflow.webhooks import signing
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import DbosEnv, Setup, invoice_pdf, submit, wait_terminal

from .conftest import Receiver

TYPES = ["docflow.document.completed.v1", "docflow.batch.completed.v1"]


def _settled(setup: Setup, endpoint_id: str, count: int) -> list[dict[str, Any]]:
    """The endpoint's deliveries once there are `count` and none is PENDING."""
    url = f"/v1/webhooks/{endpoint_id}/deliveries"
    deadline = time.monotonic() + 60
    while True:
        items: list[dict[str, Any]] = ok(
            setup.env.client.get(url, headers=setup.tenant.headers), 200
        )["items"]
        if len(items) == count and all(d["status"] != "PENDING" for d in items):
            return items
        assert time.monotonic() < deadline, items
        time.sleep(0.1)


def test_receiver_down_for_a_whole_batch_then_redelivered_once(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    receiver.default = 503
    tenant = webhook_env.tenant()
    project = post_project(webhook_env.client, tenant)
    workflow = post_workflow(webhook_env.client, tenant, project["id"])
    setup = Setup(webhook_env, tenant, project["id"], workflow["id"])
    body = {"url": receiver.url, "event_types": TYPES}
    hooks = f"/v1/projects/{project['id']}/webhooks"
    endpoint = ok(webhook_env.client.post(hooks, json=body, headers=tenant.headers), 201)

    files = [(f"inv-{i}.pdf", "application/pdf", invoice_pdf(f"INV-{i}", "10.00")) for i in (1, 2)]
    batch = submit(setup, files)
    assert wait_terminal(setup, batch["id"])["status"] == "SUCCEEDED"
    dead = _settled(setup, endpoint["id"], 3)
    assert {d["status"] for d in dead} == {"DEAD"}
    assert {d["last_error"] for d in dead} == {"HTTP 503"}
    assert all(len(d["attempts"]) == 5 for d in dead)
    assert sorted(d["event_type"] for d in dead) == sorted([TYPES[0], TYPES[0], TYPES[1]])

    receiver.default = 200
    failed_sends = len(receiver.received)
    for delivery in dead:
        url = f"/v1/webhooks/{endpoint['id']}/deliveries/{delivery['id']}/redeliver"
        ok(webhook_env.client.post(url, headers=tenant.headers), 202)
    delivered = _settled(setup, endpoint["id"], 3)
    assert {d["status"] for d in delivered} == {"DELIVERED"}
    redelivered = receiver.received[failed_sends:]
    assert sorted(r.headers["webhook-id"] for r in redelivered) == sorted(
        d["event_id"] for d in dead
    )
    for got in redelivered:
        event = json.loads(got.body)
        assert event["id"] == got.headers["webhook-id"]
        signing.verify(endpoint["secret"], got.headers, got.body, now=time.time())
    batch_event = next(json.loads(r.body) for r in redelivered if TYPES[1] in r.body.decode())
    assert batch_event["data"]["batch_id"] == batch["id"]
