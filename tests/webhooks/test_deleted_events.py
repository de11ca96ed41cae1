"""A delivery job whose event or delivery was deleted with its batch ends quietly (SKIPPED),
sending nothing more and recording nothing: deleted while its attempt was in flight, deleted
before it opened its delivery, its delivery gone before an attempt."""

from __future__ import annotations

import threading
import time

from docflow import db
from docflow.events.repository import OutboxRepository
from docflow.runtime import context
from docflow.webhooks import jobs, steps
from docflow.webhooks.models import DeliveryStatus
from support.api_fixtures import ok, post_workflow
from support.dbos_fixtures import DbosEnv, Setup, invoice_pdf, submit, wait_terminal

from .conftest import Receiver
from .helpers import delivery_log, finish, make_event, publish, setup_endpoint


def _no_dead_letters(env: DbosEnv, headers: dict[str, str]) -> bool:
    letters = ok(env.client.get("/v1/dead-letters", headers=headers), 200)["items"]
    return letters == []


def test_a_batch_deleted_while_its_delivery_is_in_flight_ends_the_job_quietly(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    receiver.default, receiver.gate = 503, threading.Event()
    tenant, project_id, endpoint = setup_endpoint(
        webhook_env, receiver, event_types=["docflow.document.completed.v1"]
    )
    workflow = post_workflow(webhook_env.client, tenant, project_id)
    case = Setup(webhook_env, tenant, project_id, workflow["id"])
    batch = submit(case, [("a.pdf", "application/pdf", invoice_pdf("INV-9", "9.00"))])
    wait_terminal(case, batch["id"])
    deadline = time.monotonic() + 30
    while not receiver.received:  # the first attempt is at the receiver, held there
        assert time.monotonic() < deadline, "no attempt"
        time.sleep(0.05)
    assert delivery_log(webhook_env, tenant, endpoint["id"])[0]["status"] == "PENDING"

    deleted = webhook_env.client.delete(f"/v1/batches/{batch['id']}", headers=tenant.headers)
    assert deleted.status_code == 204
    receiver.gate.set()  # the receiver answers 503: a retry would follow, but the delivery is gone

    (sent,) = receiver.received
    job = jobs.workflow_id(sent.headers["webhook-id"], endpoint["id"])
    assert finish([job]) == [DeliveryStatus.SKIPPED]
    assert len(receiver.received) == 1
    assert delivery_log(webhook_env, tenant, endpoint["id"]) == []
    assert _no_dead_letters(webhook_env, tenant.headers)


def test_a_job_whose_event_was_deleted_opens_no_delivery(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    event = make_event(tenant.tenant_id, project_id)
    with context.services().write_session() as session, session.begin():
        db.bind_tenant(session, tenant.tenant_id)
        assert OutboxRepository(session, tenant.tenant_id).delete_about([event["subject"]]) == 1

    assert finish(publish(webhook_env, tenant, event)) == [DeliveryStatus.SKIPPED]
    assert receiver.received == []
    assert delivery_log(webhook_env, tenant, endpoint["id"]) == []


def test_an_attempt_whose_delivery_is_gone_sends_nothing(
    webhook_env: DbosEnv, receiver: Receiver
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    event = make_event(tenant.tenant_id, project_id)
    sent = steps.Sent(tenant.tenant_id, endpoint["id"], "whd_gone", event, (2, 5), job_id="job")

    assert steps.attempt(context.services(), sent) == steps.Ended(DeliveryStatus.SKIPPED)
    assert receiver.received == []
    assert delivery_log(webhook_env, tenant, endpoint["id"]) == []
    assert _no_dead_letters(webhook_env, tenant.headers)
