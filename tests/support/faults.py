"""Fault-test support: real `docflow worker` processes on a fresh PostgreSQL database.

The test process serves the API in process (a TestClient over the real app, which runs no
workflow: it enqueues through its DBOS client, exactly like `docflow api`); the work is done by
worker subprocesses (`python -m docflow.worker --executor-id ...`, the same as
`docflow worker`) with short heartbeats. Each worker's output goes to one log file per test,
which the tests read for the structured events `document.completed`, `batch.started`,
`batch.completed` and `executor.recovered`.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from docflow import db
from docflow.batches.service import completion_id
from docflow.config import Settings
from docflow.main import create_app
from docflow.system_db import migrate_system_database
from support.api_fixtures import (
    PUBLIC_BASE_URL,
    ApiTenant,
    make_api_tenant,
    ok,
    post_project,
    post_workflow,
)
from support.db_fixtures import APP_ROLE
from support.dbos_fixtures import invoice_pdf
from support.process_fixtures import FreshPostgres, fresh_postgres, spawn, wait_for

__all__ = ["fresh_postgres"]

HEARTBEAT_SECONDS = 0.5
EXECUTOR_TIMEOUT_SECONDS = 3.0


@dataclass
class Workers:
    """Worker subprocesses sharing one log file."""

    env: dict[str, str]
    log: Path
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, executor_id: str, *, wait: bool = True, **env: str) -> None:
        before = self.events("worker.started", executor_id=executor_id)
        command = ["-m", "docflow.worker", "--executor-id", executor_id]
        self.running[executor_id] = spawn(command, {**self.env, **env}, self.log)
        if wait:
            wait_for(
                lambda: self.events("worker.started", executor_id=executor_id) > before,
                timeout=60,
                what=f"worker {executor_id} to start (log: {self.log})",
            )

    def kill(self, executor_id: str) -> None:
        process = self.running.pop(executor_id)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for process in self.running.values():
            process.terminate()
        for process in self.running.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.running.clear()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, chars: int = 3000) -> str:
        return self.log_text()[-chars:]

    def events(self, event: str, **fields: str) -> int:
        """How many times the workers logged `event` with these field values."""
        count = 0
        for line in self.log_text().splitlines():
            if re.search(rf"\b{re.escape(event)}\s", line) and all(
                re.search(rf"\b{k}={re.escape(v)}(\s|$)", line) for k, v in fields.items()
            ):
                count += 1
        return count


@dataclass
class FaultEnv:
    pg: FreshPostgres
    settings: Settings
    client: TestClient
    tmp: Path
    worker_env: dict[str, str]

    def workers(self, name: str) -> Workers:
        return Workers(env=self.worker_env, log=self.tmp / f"{name}.log")


@pytest.fixture(scope="module")
def fault_env(
    fresh_postgres: FreshPostgres, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FaultEnv]:
    pg = fresh_postgres
    tmp = tmp_path_factory.mktemp("faults")
    settings = Settings(
        env="test",
        home=tmp,
        database_url=pg.app_url,
        migration_database_url=pg.owner_url,
        storage_url=f"file://{tmp / 'files'}",
        public_base_url=PUBLIC_BASE_URL,
        max_documents_per_batch=60,
    )
    migrate_system_database(settings, app_role=APP_ROLE)
    worker_env = {
        "PYTHONUNBUFFERED": "1",  # every log line reaches the file before a SIGKILL
        "DOCFLOW_ENV": "test",
        "DOCFLOW_HOME": str(tmp),
        "DOCFLOW_DATABASE_URL": pg.app_url,
        "DOCFLOW_STORAGE_URL": settings.resolved_storage_url(),
        "DOCFLOW_QUEUE_POLLING_SECONDS": "0.05",
        "DOCFLOW_MAX_CONCURRENCY": "4",
        "DOCFLOW_WORKER_CONCURRENCY": "2",
        "DOCFLOW_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
        "DOCFLOW_EXECUTOR_TIMEOUT_SECONDS": str(EXECUTOR_TIMEOUT_SECONDS),
        "DOCFLOW_EXECUTOR_ID": "",
    }
    engine = db.make_engine(pg.app_url, pool_size=5)
    try:
        with TestClient(create_app(settings, engine=engine)) as client:
            yield FaultEnv(pg, settings, client, tmp, worker_env)
    finally:
        engine.dispose()


@dataclass
class Submitted:
    tenant: ApiTenant
    batch: dict[str, Any]
    files: list[bytes]

    @property
    def batch_id(self) -> str:
        return str(self.batch["id"])

    @property
    def document_ids(self) -> list[str]:
        return [d["id"] for d in self.batch["documents"]]


def create_batch(env: FaultEnv, count: int, *, scheduled_for: datetime | None = None) -> Submitted:
    """A new tenant, project and workflow, and a batch of `count` text PDFs (not uploaded)."""
    tenant = make_api_tenant(db.make_write_session_factory(env.client.app.state.engine), "Faults")
    project = post_project(env.client, tenant)
    workflow = post_workflow(env.client, tenant, project["id"])
    files = [invoice_pdf(f"INV-{i:04d}", f"{100 + i}.25") for i in range(count)]
    body: dict[str, Any] = {
        "project_id": project["id"],
        "workflow_id": workflow["id"],
        "documents": [
            {"name": f"inv-{i:03d}.pdf", "content_type": "application/pdf", "size": len(f)}
            for i, f in enumerate(files)
        ],
    }
    if scheduled_for is not None:
        body["scheduled_for"] = scheduled_for.isoformat()
    batch = ok(env.client.post("/v1/batches", json=body, headers=tenant.headers), 202)
    return Submitted(tenant, batch, files)


def upload(env: FaultEnv, submitted: Submitted, index: int) -> None:
    url = submitted.batch["documents"][index]["upload_url"]
    assert url.startswith(PUBLIC_BASE_URL), url
    ok(env.client.put(url[len(PUBLIC_BASE_URL) :], content=submitted.files[index]), 200)


def upload_all(env: FaultEnv, submitted: Submitted) -> None:
    for index in range(len(submitted.files)):
        upload(env, submitted, index)


def batch_state(env: FaultEnv, submitted: Submitted) -> dict[str, Any]:
    url = f"/v1/batches/{submitted.batch_id}"
    return ok(env.client.get(url, headers=submitted.tenant.headers), 200)


def done_count(env: FaultEnv, submitted: Submitted) -> int:
    state = batch_state(env, submitted)
    return int(state["succeeded_count"] + state["review_count"] + state["failed_count"])


def wait_finished(env: FaultEnv, submitted: Submitted, workers: Workers, timeout: float) -> None:
    """Wait for the batch row to be terminal and then for its DBOS workflows to be recorded as
    ended: the batch's last step commits a moment before DBOS records the workflow's outcome."""
    wait_for(
        lambda: batch_state(env, submitted)["status"] not in ("CREATED", "PROCESSING"),
        timeout=timeout,
        what=f"batch {submitted.batch_id} to finish (worker log: {workers.log})",
        interval=0.2,
    )
    wait_for(
        lambda: (
            env.pg.scalar(
                "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid = ANY(:ids) "
                "AND status IN ('PENDING', 'ENQUEUED')",
                ids=flow_ids(submitted),
            )
            == 0
        ),
        timeout=30,
        what=f"the workflows of batch {submitted.batch_id} to be recorded as ended",
        interval=0.2,
    )


def check_exactly_once(
    env: FaultEnv, submitted: Submitted, workers: Workers, *, killed: bool = False
) -> None:
    """Every document terminal, each counted once; counters right; the batch's execution and
    its completion ran once each, as one DBOS workflow each, and the completion was recorded
    once.

    The counters are the proof for documents: a document's terminal status and its batch
    counter change in one transaction, guarded by a compare-and-set, so a double completion
    would show as a count above the number of documents. Without kills, each document's
    `document.completed` event is also logged exactly once (with kills, a process killed
    between that log line and its commit may log one that was rolled back)."""
    pg, batch_id = env.pg, submitted.batch_id
    count = len(submitted.files)
    state = batch_state(env, submitted)
    assert state["status"] == "SUCCEEDED", state
    assert (state["succeeded_count"], state["review_count"], state["failed_count"]) == (
        count,
        0,
        0,
    )
    statuses = pg.rows(
        "SELECT status, count(*) FROM documents WHERE batch_id = :b GROUP BY status", b=batch_id
    )
    assert statuses == [("SUCCEEDED", count)]
    assert (
        pg.scalar(
            "SELECT count(*) FROM documents WHERE batch_id = :b AND result IS NOT NULL", b=batch_id
        )
        == count
    )
    for document_id in submitted.document_ids:
        completed = workers.events("document.completed", document_id=document_id)
        assert completed == 1 or (killed and completed == 2), f"{document_id}: {completed}"
    assert workers.events("batch.started", batch_id=batch_id) == 1
    assert workers.events("batch.completed", batch_id=batch_id) == 1
    flows = pg.rows(
        "SELECT status, count(*) FROM dbos.workflow_status WHERE workflow_uuid = ANY(:ids) "
        "GROUP BY status",
        ids=flow_ids(submitted),
    )
    assert flows == [("SUCCESS", count + 2)]
    completions = pg.scalar(
        "SELECT count(*) FROM dbos.operation_outputs WHERE workflow_uuid = ANY(:ids) "
        "AND function_name = 'batch.complete'",
        ids=flow_ids(submitted),
    )
    assert completions == 1


def flow_ids(submitted: Submitted) -> list[str]:
    """The workflow ids of the batch's execution, its completion and its documents' flows."""
    return [
        submitted.batch_id,
        completion_id(submitted.batch_id),
        *(f"doc:{d}" for d in submitted.document_ids),
    ]


def executors_of_documents(env: FaultEnv, submitted: Submitted) -> dict[str, int]:
    rows = env.pg.rows(
        "SELECT executor_id, count(*) FROM dbos.workflow_status WHERE workflow_uuid = ANY(:ids) "
        "GROUP BY executor_id",
        ids=[f"doc:{d}" for d in submitted.document_ids],
    )
    return {str(executor): int(n) for executor, n in rows}
