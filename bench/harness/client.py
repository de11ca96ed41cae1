"""The scenarios' side of the HTTP API, used as an integrator uses it (see docflow.demo): a
tenant and its API key (made in the database, as `docflow tenants create` does), a project and
the invoice workflow of `examples/`, a batch declared by POST, every file PUT to its upload URL
(eight at a time), and the batch followed until it is terminal.

The end of a batch is seen by reading its row from the database every 50 ms in this process, not
by polling the API: polling would add requests (and their queries) to the process being measured.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from bench.harness.documents import BenchFile
from bench.harness.processes import BenchError, Deployment
from docflow import db
from docflow.client.remote import send_upload, upload_landed
from docflow.demo import EXAMPLES_DIR
from docflow.extraction.workflow_file import load_workflow_file
from docflow.tenants import service as tenants_service

TERMINAL = frozenset({"SUCCEEDED", "REVIEW_REQUIRED", "PARTIALLY_FAILED", "FAILED"})
UPLOADERS = 8
RETRIES = 10
INVOICE_WORKFLOW = EXAMPLES_DIR / "invoice.yaml"


def create_tenant(deployment: Deployment, name: str, *, plan: str = "enterprise") -> str:
    """A new tenant on `plan` (by default `enterprise`: no rate or monthly limit, as the bench
    measures the pipeline and the API, not a plan's limits) and an API key with every scope;
    its token."""
    engine = db.make_engine(deployment.app_url)
    try:
        with db.make_session_factory(engine).begin() as session:
            tenant = tenants_service.create_tenant(session, name=name, plan=plan)
            db.bind_tenant(session, tenant.id)
            _, token = tenants_service.create_api_key(
                session, tenant.id, name="bench", scopes=["*"]
            )
            return token
    finally:
        engine.dispose()


def workflow_body(reading: str | None = None) -> dict[str, Any]:
    """The body that creates examples/invoice.yaml through the API (with another reading
    policy when `reading` is given)."""
    body: dict[str, Any] = load_workflow_file(INVOICE_WORKFLOW).model_dump(
        mode="json", exclude_none=True
    )
    if reading is not None:
        body["reading"] = reading
    return body


def _request(client: httpx.Client, method: str, url: str, expect: int, **kwargs: Any) -> Any:
    """A request whose 503 (busy database) is retried after its Retry-After; any other answer
    than `expect` is a BenchError."""
    for _ in range(RETRIES):
        response = client.request(method, url, **kwargs)
        if response.status_code != 503:
            break
        time.sleep(float(response.headers.get("Retry-After", "1")))
    if response.status_code != expect:
        raise BenchError(f"{method} {url} answered {response.status_code}: {response.text}")
    return response.json()


class Api:
    """One tenant's HTTP client: API calls with its key, uploads without (the URL is signed)."""

    def __init__(self, base_url: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        limits = httpx.Limits(max_connections=UPLOADERS + 2)
        self.client = httpx.Client(base_url=base_url, headers=headers, timeout=60.0, limits=limits)
        self.uploader = httpx.Client(timeout=60.0, limits=limits)

    def close(self) -> None:
        self.client.close()
        self.uploader.close()

    def call(self, method: str, url: str, expect: int, **kwargs: Any) -> Any:
        """One API call; a creating POST carries an Idempotency-Key."""
        headers = dict(kwargs.pop("headers", None) or {})
        if method == "POST":
            headers["Idempotency-Key"] = f"bench-{uuid.uuid4()}"
        return _request(self.client, method, url, expect, headers=headers, **kwargs)

    def upload(self, document: dict[str, Any], file: BenchFile) -> None:
        """Send a file to its document's upload target (the API's signed PUT, or an S3 form),
        with no API key."""
        answer = send_upload(self.uploader, document, file.read(), filename=file.name)
        if not upload_landed(answer):
            raise BenchError(f"upload answered {answer.status_code}: {answer.text}")

    def invoice_workflow(self, reading: str | None = None) -> tuple[str, str]:
        """A new project with the invoice workflow (read under `reading`, else the example's
        policy): (project id, workflow id)."""
        project = self.call("POST", "/v1/projects", 201, json={"name": "Bench"})
        path = f"/v1/projects/{project['id']}/workflows"
        workflow = self.call("POST", path, 201, json=workflow_body(reading))
        return project["id"], workflow["id"]


@dataclass
class Submitted:
    """A batch as submitted: its id, its documents' ids with their files, and when (time.time()
    of the POST and of the last upload's answer)."""

    batch_id: str
    files: dict[str, BenchFile]
    posted_at: float
    uploaded_at: float
    finished_at: float = 0.0
    status: str = ""

    @property
    def seconds(self) -> float:
        return self.finished_at - self.posted_at

    @property
    def upload_seconds(self) -> float:
        return self.uploaded_at - self.posted_at


def declare(project_id: str, workflow_id: str, files: list[BenchFile]) -> dict[str, Any]:
    documents = [
        {"name": f.name, "content_type": f.content_type, "size": f.path.stat().st_size}
        for f in files
    ]
    return {"project_id": project_id, "workflow_id": workflow_id, "documents": documents}


def submit(api: Api, project_id: str, workflow_id: str, files: list[BenchFile]) -> Submitted:
    """POST the batch and PUT every file to its upload URL; the batch starts on the last one."""
    body = declare(project_id, workflow_id, files)
    posted_at = time.time()
    batch = api.call("POST", "/v1/batches", 202, json=body)
    targets = list(zip(batch["documents"], files, strict=True))

    def put(target: tuple[dict[str, Any], BenchFile]) -> None:
        document, file = target
        api.upload(document, file)

    with ThreadPoolExecutor(UPLOADERS) as pool:
        list(pool.map(put, targets))
    uploaded_at = time.time()
    return Submitted(
        batch["id"], {d["id"]: f for d, f in targets}, posted_at=posted_at, uploaded_at=uploaded_at
    )


class BatchWatcher:
    """Reads batch rows straight from the deployment's database (no load on the API)."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.engine = create_engine(deployment.read_url, pool_size=1)

    def close(self) -> None:
        self.engine.dispose()

    def status(self, batch_id: str) -> str:
        with self.engine.connect() as conn:
            found = conn.execute(
                text("SELECT status FROM batches WHERE id = :id"), {"id": batch_id}
            ).scalar()
        return str(found)

    def unfinished_documents(self, batch_id: str) -> int:
        """How many of the batch's documents are not terminal yet."""
        with self.engine.connect() as conn:
            found = conn.execute(
                text(
                    "SELECT document_count - succeeded_count - review_count - failed_count "
                    "FROM batches WHERE id = :id"
                ),
                {"id": batch_id},
            ).scalar()
        return int(found or 0)

    def projection_lags_ms(
        self, batch_id: str, *, timeout: float, poll: float = 0.05
    ) -> list[float]:
        """Once every document of the batch has its search entry of the document's version
        (waiting up to `timeout` seconds), each one's projection lag: from the document's last
        change (its completion) to the entry's write, in milliseconds."""
        lags = text(
            "SELECT d.updated_at, s.updated_at, s.version >= d.version FROM documents d "
            "LEFT JOIN search_entries s ON s.tenant_id = d.tenant_id AND s.document_id = d.id "
            "WHERE d.batch_id = :id"
        )
        deadline = time.monotonic() + timeout
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(lags, {"id": batch_id}).all()
            if rows and all(current for _, _, current in rows):
                return [
                    (_utc(entry) - _utc(changed)).total_seconds() * 1000
                    for changed, entry, _ in rows
                ]
            if time.monotonic() > deadline:
                behind = sum(1 for _, _, current in rows if not current)
                raise BenchError(
                    f"batch {batch_id}: {behind} search entries behind after {timeout:.0f} s"
                )
            self.deployment.check_alive()
            time.sleep(poll)

    def projection_stages_ms(self, batch_id: str) -> dict[str, list[float]]:
        """Where the projection lag of the batch's documents went, per document event the
        search consumer took (read after `projection_lags_ms`), in milliseconds: `relay` from
        the event's write to its hand-over (outbox `published_at`), `queued` from the search
        consumer's workflow being enqueued to its start, `run` from its start to the end of its last
        step (DBOS's `workflow_status` and `operation_outputs`, in the same SQLite file). On
        PostgreSQL DBOS keeps its tables in a system database of its own: no stages (empty)."""
        found: dict[str, list[float]] = {"relay": [], "queued": [], "run": []}
        if self.engine.dialect.name != "sqlite":
            return found
        stages = text(
            "SELECT e.occurred_at, e.published_at, w.created_at, w.started_at_epoch_ms, "
            "(SELECT MAX(o.completed_at_epoch_ms) FROM operation_outputs o "
            "WHERE o.workflow_uuid = w.workflow_uuid) FROM outbox_events e JOIN documents d "
            "ON d.tenant_id = e.tenant_id AND e.subject = 'documents/' || d.id "
            "JOIN workflow_status w ON w.workflow_uuid = e.source || ':' || e.id || :consumer "
            "WHERE d.batch_id = :id AND w.status = 'SUCCESS'"
        )
        with self.engine.connect() as conn:
            rows = conn.execute(stages, {"id": batch_id, "consumer": ":search"}).all()
        for occurred, published, created, started, ended in rows:
            relay = (_utc(published) - _utc(occurred)).total_seconds() * 1000
            found["relay"].append(relay)
            found["queued"].append(float(started - created))
            found["run"].append(float(ended - started))
        return found

    def wait(self, submitted: Submitted, *, timeout: float, poll: float = 0.05) -> None:
        """Wait until the batch is terminal; sets `finished_at` (time.time()) and `status`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.status(submitted.batch_id)
            if status in TERMINAL:
                submitted.finished_at, submitted.status = time.time(), status
                return
            self.deployment.check_alive()
            time.sleep(poll)
        raise BenchError(f"batch {submitted.batch_id} not terminal after {timeout:.0f} s")


def run_batch(
    api: Api,
    watcher: BatchWatcher,
    workflow: tuple[str, str],
    files: list[BenchFile],
    *,
    timeout: float,
) -> Submitted:
    """Submit `files` as one batch and wait until it is terminal."""
    submitted = submit(api, *workflow, files)
    watcher.wait(submitted, timeout=timeout)
    return submitted


def _utc(value: datetime | str) -> datetime:
    """A timestamp column read without the models' types (SQLite gives text, naive UTC)."""
    found = datetime.fromisoformat(value) if isinstance(value, str) else value
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found
