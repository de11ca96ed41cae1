"""A review through the real runtime: `document.reviewed` and the batch's new
`batch.completed` leave through the outbox and reach a real receiver, signed, like every
other event."""

from __future__ import annotations

import json
import time
from typing import Any

from docflow.runtime import context
from docflow.tenancy import TenantContext, from_credential
from docflow.webhooks import signing
from support.api_fixtures import ok
from support.dbos_fixtures import DbosEnv
from support.review_fixtures import reviewable_batch

from .conftest import Receiver

TYPES = ["docflow.document.reviewed.v1", "docflow.batch.completed.v1"]


def test_a_review_reaches_the_webhooks_with_the_batchs_new_status(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant = webhook_env.tenant()
    with context.services().write_session() as session, session.begin():
        batch = reviewable_batch(
            session, TenantContext(tenant_id=from_credential(tenant.tenant_id)), review=1
        )
        project_id, [document_id] = batch.project_id, [d.id for d in batch.documents]
    body = {"url": receiver.url, "event_types": TYPES}
    hooks = f"/v1/projects/{project_id}/webhooks"
    endpoint = ok(webhook_env.client.post(hooks, json=body, headers=tenant.headers), 201)
    h = tenant.headers
    ok(webhook_env.client.post(f"/v1/documents/{document_id}/claim", headers=h), 200)
    decision = {"fields": {"total": "12.50"}, "decision": "approve"}
    url = f"/v1/documents/{document_id}/review"
    review = ok(webhook_env.client.post(url, json=decision, headers=h), 200)["review"]

    deadline = time.monotonic() + 60
    while len(receiver.received) < 2:
        assert time.monotonic() < deadline, receiver.received
        time.sleep(0.1)
    events: dict[str, dict[str, Any]] = {}
    for got in receiver.received:
        signing.verify(endpoint["secret"], got.headers, got.body, now=time.time())
        event = json.loads(got.body)
        events[event["type"]] = event["data"]
    reviewed, completed = events[TYPES[0]], events[TYPES[1]]
    assert (reviewed["document_id"], reviewed["review_id"]) == (document_id, review["id"])
    assert (reviewed["status"], reviewed["corrected_fields"]) == ("SUCCEEDED", ["total"])
    assert "12.50" not in json.dumps(reviewed)  # names of corrected fields, never values
    assert (completed["status"], completed["succeeded_count"]) == ("SUCCEEDED", 1)
