"""A worker SIGKILLed between sending a webhook and recording its outcome: the receiver holds its
answer to the first request until the worker is dead, so the kill lands exactly in that window
(the attempt's step is waiting for the answer, nothing of it is recorded). A worker started again
with the same executor id recovers the delivery job and sends the event again: the receiver gets
it at least once and at most twice, every copy with the same `webhook-id` and a valid signature,
and the delivery log ends DELIVERED with one successful attempt. Nothing is lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from docflow import db
from docflow.events.envelopes import WORKFLOW_PUBLISHED
from docflow.tenancy import TenantContext
from docflow.webhooks import jobs, signing
from docflow.webhooks import service as webhooks_service
from support.api_fixtures import make_api_tenant, post_project, post_workflow
from support.faults import FaultEnv
from support.http_server import serving
from support.process_fixtures import wait_for

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

EXECUTOR = "webhook-worker"
WORKER_ENV = {
    "DOCFLOW_ALLOW_PRIVATE_WEBHOOK_URLS": "true",
    # Longer than any wait below: the held request must end by the kill, never by a timeout.
    "DOCFLOW_WEBHOOK_TIMEOUT_SECONDS": "60",
}


@dataclass
class HoldingReceiver:
    """Records every POST; the first one's answer is held until `release` is set (then 200),
    later ones are answered 200 at once."""

    url: str = ""
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    first_arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arrived(self, headers: dict[str, str], body: bytes) -> bool:
        """Record a request; whether it is the first (whose answer is held)."""
        with self.lock:
            self.received.append((headers, body))
            first = len(self.received) == 1
        if first:
            self.first_arrived.set()
        return first


def _handler(receiver: HoldingReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            if receiver.arrived(headers, body):
                receiver.release.wait(timeout=120)
            try:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()
            except OSError:
                pass  # the sender was killed while we held the answer

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@pytest.fixture
def receiver() -> Iterator[HoldingReceiver]:
    state = HoldingReceiver()
    with serving(_handler(state)) as server:
        state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
        try:
            yield state
        finally:
            state.release.set()


def _delivery(env: FaultEnv, endpoint_id: str) -> tuple[str, str, int] | None:
    """(id, status, attempts) of the endpoint's one delivery, None before it is opened."""
    rows = env.pg.rows(
        "SELECT id, status, attempts FROM webhook_deliveries WHERE endpoint_id = :e", e=endpoint_id
    )
    assert len(rows) <= 1, rows
    return (str(rows[0][0]), str(rows[0][1]), int(str(rows[0][2]))) if rows else None


def test_a_worker_killed_between_sending_and_recording_loses_nothing(
    fault_env: FaultEnv, receiver: HoldingReceiver
) -> None:
    workers = fault_env.workers("webhook-crash")
    workers.start(EXECUTOR, **WORKER_ENV)
    try:
        factory = db.make_write_session_factory(fault_env.client.app.state.engine)
        tenant = make_api_tenant(factory, "Webhook crash")
        project = post_project(fault_env.client, tenant)
        with factory() as session:
            created = webhooks_service.create_endpoint(
                session,
                TenantContext(tenant.tenant_id),
                project_id=project["id"],
                url=receiver.url,
                event_types=[WORKFLOW_PUBLISHED],
                description="crash test",
                key_material=fault_env.settings.signing_secret,
                allow_private=True,
            )
            endpoint_id, secret = created.endpoint.id, created.secret
            session.commit()
        post_workflow(fault_env.client, tenant, project["id"])  # emits the event

        wait_for(
            receiver.first_arrived.is_set,
            timeout=60,
            what=f"the first webhook to arrive (log: {workers.log})",
            interval=0.02,
        )
        # The worker is inside the attempt's step, waiting for the held answer: the attempt is
        # sent and not recorded, neither in the delivery log nor as a step output.
        opened = _delivery(fault_env, endpoint_id)
        assert opened is not None and opened[1:] == ("PENDING", 0), opened
        ((_, first_body),) = receiver.received
        event_id = receiver.received[0][0]["webhook-id"]
        job = jobs.workflow_id(event_id, endpoint_id)
        recorded = fault_env.pg.scalar(
            "SELECT count(*) FROM dbos.operation_outputs WHERE workflow_uuid = :w "
            "AND function_name = 'webhooks.attempt'",
            w=job,
        )
        assert recorded == 0
        workers.kill(EXECUTOR)
        receiver.release.set()

        workers.start(EXECUTOR, **WORKER_ENV)
        wait_for(
            lambda: (_delivery(fault_env, endpoint_id) or ("", "", 0))[1] == "DELIVERED",
            timeout=60,
            what=f"the delivery to be recorded DELIVERED (log: {workers.log})",
            interval=0.1,
        )
        wait_for(
            lambda: (
                fault_env.pg.scalar(
                    "SELECT status FROM dbos.workflow_status WHERE workflow_uuid = :w", w=job
                )
                == "SUCCESS"
            ),
            timeout=30,
            what="the delivery job to be recorded as ended",
        )
    finally:
        workers.stop_all()

    # At least once, at most twice, always the same message, signed.
    assert 1 <= len(receiver.received) <= 2, len(receiver.received)
    assert len(receiver.received) == 2  # the kill landed after the send: it was sent again
    for headers, body in receiver.received:
        assert headers["webhook-id"] == event_id
        assert body == first_body
        # Each copy was signed when sent (the recovery's copy afresh): valid for its timestamp.
        assert signing.verify(secret, headers, body, now=int(headers["webhook-timestamp"])) == (
            event_id
        )
        assert signing.verify(secret, headers, body, now=time.time()) == event_id
    outbox = fault_env.pg.rows(
        "SELECT id FROM outbox_events WHERE tenant_id = :t AND type = :k",
        t=tenant.tenant_id,
        k=WORKFLOW_PUBLISHED,
    )
    assert outbox == [(event_id,)]

    # The delivery log: DELIVERED, with one attempt, the successful one.
    delivered = _delivery(fault_env, endpoint_id)
    assert delivered is not None and delivered[1:] == ("DELIVERED", 1), delivered
    attempts = fault_env.pg.rows(
        "SELECT attempt, status_code, error FROM webhook_attempts WHERE delivery_id = :d",
        d=delivered[0],
    )
    assert attempts == [(1, 200, None)]
    assert fault_env.pg.scalar("SELECT count(*) FROM event_dead_letters") == 0
    assert workers.events("worker.started", executor_id=EXECUTOR) == 2
