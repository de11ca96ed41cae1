"""A database that keeps dropping the application's connections loses no webhook.

While a worker runs a 40-document batch for a project with a webhook endpoint, every backend of
the application role is terminated (`pg_terminate_backend`) every 0.7 s for 25 s: the
worker's steps, its DBOS checkpoints and queue polls all lose their connections again and
again. Afterwards every event of the project (the workflow's publication, the 40 documents'
outcomes, the batch's completion) is delivered to the endpoint, every delivery is DELIVERED,
none is left PENDING, no dead letter is written and no workflow is left in ERROR."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from docflow import db
from docflow.reconciler.steps import GIVE_UP
from docflow.tenancy import TenantContext
from docflow.webhooks import service as webhooks_service
from support.api_fixtures import make_api_tenant, ok, post_project, post_workflow
from support.db_fixtures import APP_ROLE
from support.dbos_fixtures import invoice_pdf
from support.faults import FaultEnv, Submitted, upload_all
from support.http_server import serving
from support.process_fixtures import wait_for

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

EXECUTOR = "storm-worker"
DOCUMENTS = 40
STORM_SECONDS = 25.0
STORM_EVERY = 0.7
WORKER_ENV = {
    "DOCFLOW_ALLOW_PRIVATE_WEBHOOK_URLS": "true",
    "DOCFLOW_WEBHOOK_RETRY_SECONDS": "[1]",
    "DOCFLOW_RECONCILE_INTERVAL_SECONDS": "5",
}


@dataclass
class Receiver:
    """Answers 200 to every POST and records the `webhook-id` of each."""

    url: str = ""
    ids: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            with state.lock:
                state.ids.append(str(self.headers.get("webhook-id")))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    with serving(Handler) as server:
        state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
        yield state


def storm(owner_url: str) -> int:
    """Terminate every backend of the application role in the test database every
    `STORM_EVERY` seconds for `STORM_SECONDS`; how many were terminated."""
    engine = create_engine(owner_url, pool_size=1)
    terminated = 0
    end = time.monotonic() + STORM_SECONDS
    try:
        while time.monotonic() < end:
            with engine.begin() as conn:
                terminated += len(
                    conn.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE usename = :role AND datname = current_database()"
                        ),
                        {"role": APP_ROLE},
                    ).all()
                )
            time.sleep(STORM_EVERY)
    finally:
        engine.dispose()
    return terminated


def _submit(env: FaultEnv, receiver: Receiver) -> Submitted:
    """A tenant whose project has an endpoint for every event type, then a workflow and a
    batch of text PDFs (not uploaded)."""
    factory = db.make_write_session_factory(env.client.app.state.engine)
    tenant = make_api_tenant(factory, "Storm")
    project = post_project(env.client, tenant)
    with factory() as session:
        webhooks_service.create_endpoint(
            session,
            TenantContext(tenant.tenant_id),
            project_id=project["id"],
            url=receiver.url,
            key_material=env.settings.signing_secret,
            allow_private=True,
        )
        session.commit()
    workflow = post_workflow(env.client, tenant, project["id"])  # one event
    files = [invoice_pdf(f"INV-{i:04d}", f"{100 + i}.25") for i in range(DOCUMENTS)]
    body = {
        "project_id": project["id"],
        "workflow_id": workflow["id"],
        "documents": [
            {"name": f"inv-{i:03d}.pdf", "content_type": "application/pdf", "size": len(f)}
            for i, f in enumerate(files)
        ],
    }
    batch = ok(env.client.post("/v1/batches", json=body, headers=tenant.headers), 202)
    return Submitted(tenant, batch, files)


def test_connections_terminated_every_0_7_s_for_25_s_lose_no_webhook(
    fault_env: FaultEnv, receiver: Receiver
) -> None:
    pg = fault_env.pg
    workers = fault_env.workers("storm")
    workers.start(EXECUTOR, **WORKER_ENV)
    try:
        submitted = _submit(fault_env, receiver)
        tenant_id = submitted.tenant.tenant_id
        upload_all(fault_env, submitted)  # the last upload starts the batch
        done_before = pg.scalar(
            "SELECT count(*) FROM documents WHERE batch_id = :b "
            "AND status IN ('SUCCEEDED', 'REVIEW_REQUIRED', 'FAILED')",
            b=submitted.batch_id,
        )
        terminated = storm(pg.owner_url)
        expected = DOCUMENTS + 2  # the workflow's publication, each document, the batch

        def delivered() -> int:
            return int(
                str(
                    pg.scalar(
                        "SELECT count(*) FROM webhook_deliveries "
                        "WHERE tenant_id = :t AND status = 'DELIVERED'",
                        t=tenant_id,
                    )
                )
            )

        wait_for(
            lambda: delivered() == expected,
            timeout=90,
            what=f"{expected} deliveries (log: {workers.log})",
            interval=0.5,
        )
        wait_for(
            lambda: (
                pg.scalar(
                    "SELECT count(*) FROM dbos.workflow_status WHERE name = ANY(:names) "
                    "AND status IN ('PENDING', 'ENQUEUED', 'ERROR')",
                    names=list(GIVE_UP),
                )
                == 0
            ),
            timeout=30,
            what=f"every workflow to end (log: {workers.log})",
            interval=0.5,
        )
    finally:
        workers.stop_all()

    assert done_before < DOCUMENTS  # the storm began while the batch ran
    assert terminated > 20, terminated  # and really hit the worker
    assert workers.log_text().count("automatically retried") > 0  # and steps retried
    events = {
        str(e) for (e,) in pg.rows("SELECT id FROM outbox_events WHERE tenant_id = :t", t=tenant_id)
    }
    assert len(events) == expected
    assert set(receiver.ids) == events  # 0 missing (a copy sent twice has one webhook-id)
    deliveries = pg.rows(
        "SELECT status, count(*) FROM webhook_deliveries WHERE tenant_id = :t GROUP BY status",
        t=tenant_id,
    )
    assert deliveries == [("DELIVERED", expected)]  # 0 stuck PENDING
    assert pg.scalar("SELECT count(*) FROM event_dead_letters") == 0
    assert pg.scalar("SELECT count(*) FROM dbos.workflow_status WHERE status = 'ERROR'") == 0
    state = pg.rows("SELECT status FROM batches WHERE id = :b", b=submitted.batch_id)
    assert state == [("SUCCEEDED",)]
