"""The durable runtime on a database of its own: DBOS launched for real, the real engine.

`dbos_env` (module scope) creates a fresh database of the kind under test (DOCFLOW_TEST_DATABASE),
migrates it as the owner (PostgreSQL: DBOS's schema `dbos` too, granted to the application role),
launches DBOS in this process as the application role with the queues (no schedule: tests call
the scheduler's function themselves), and serves the real app through a TestClient. Everything
is torn down after the module: DBOS destroyed, database dropped. Import it into a test module with
`from support.dbos_fixtures import dbos_env  # noqa: F401`.

Also: generators of sample files (text PDFs, a scanned PNG) and helpers that drive a batch
through the HTTP API and wait for it.
"""

from __future__ import annotations

import io
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from dbos import DBOS
from fastapi.testclient import TestClient
from PIL import Image, ImageDraw, ImageFont
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow import bootstrap, db
from docflow.config import Settings
from docflow.main import create_app
from docflow.runtime import launch
from docflow.system_db import migrate_system_database
from support.api_fixtures import (
    PUBLIC_BASE_URL,
    ApiTenant,
    make_api_tenant,
    ok,
    post_project,
    post_workflow,
)
from support.db_fixtures import APP_ROLE, POSTGRES_ADMIN_URL, SYSTEM_ROLE, on_postgres

EXECUTOR_ID = "test-executor"


@dataclass
class DbosEnv:
    """The launched runtime's settings, engine and API. `session_factory` is the write session
    factory (BEGIN IMMEDIATE on SQLite): the runtime's workers write this database too, and a
    deferred transaction that reads and then writes would fail at once on one of their commits."""

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    client: TestClient

    def tenant(self) -> ApiTenant:
        return make_api_tenant(self.session_factory, f"Tenant {secrets.token_hex(4)}")


@dataclass
class Setup:
    """A tenant with a project and an invoice workflow, made through the API."""

    env: DbosEnv
    tenant: ApiTenant
    project_id: str
    workflow_id: str


def _fresh_database(tmp: Any) -> Iterator[tuple[str, str]]:
    """(owner URL, application URL) of a new migrated database, dropped afterwards."""
    if not on_postgres():
        url = f"sqlite:///{tmp / 'docflow.db'}"
        db.run_migrations(url)
        yield url, url
        return
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_dbos") as owner_url:
        db.ensure_app_role(owner_url, APP_ROLE)
        db.ensure_system_role(owner_url, SYSTEM_ROLE)
        db.run_migrations(owner_url, app_role=APP_ROLE)
        yield owner_url, db.role_url(owner_url, APP_ROLE)


def env_settings(tmp: Any, owner_url: str, app_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "env": "test",
        "home": tmp,
        "database_url": app_url,
        "migration_database_url": owner_url,
        "storage_url": f"file://{tmp / 'files'}",
        "public_base_url": PUBLIC_BASE_URL,
        "queue_polling_seconds": 0.05,
        "background_polling_seconds": 0.05,
        "max_concurrency": 4,
        "worker_concurrency": 4,
        "max_documents_per_batch": 60,
        "max_document_bytes": 5 * 1024 * 1024,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="module")
def dbos_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbosEnv]:
    with launched_env(tmp_path_factory.mktemp("dbos")) as env:
        yield env


@contextmanager
def launched_env(tmp: Any, **overrides: Any) -> Iterator[DbosEnv]:
    """A migrated database and the launched runtime with `env_settings(**overrides)`, and
    the API over them, until the block ends."""
    databases = _fresh_database(tmp)
    owner_url, app_url = next(databases)
    settings = env_settings(tmp, owner_url, app_url, **overrides)
    migrate_system_database(settings, app_role=APP_ROLE if on_postgres() else None)
    engine = db.make_engine(app_url, pool_size=10)
    launch.launch(
        settings,
        flows=bootstrap.flows(),
        executor_id=EXECUTOR_ID,
        engine=engine,
        schedules=False,
    )
    try:
        with TestClient(create_app(settings, engine=engine)) as client:
            yield DbosEnv(settings, engine, db.make_write_session_factory(engine), client)
    finally:
        stop_runtime()
        engine.dispose()
        next(databases, None)


UNFINISHED = ["PENDING", "ENQUEUED"]


def stop_runtime(drain_seconds: float = 15.0) -> None:
    """Let the module's remaining work finish (a consumer, a publisher run woken by a commit),
    cancel what is still waiting after `drain_seconds` (a delivery sleeping before a retry), and
    stop DBOS, so no job outlives the database the fixture is about to drop: one that did would
    retry against it forever and keep the test process from exiting."""
    deadline = time.monotonic() + drain_seconds
    while time.monotonic() < deadline and DBOS.list_workflows(status=UNFINISHED, load_input=False):
        time.sleep(0.1)
    for status in DBOS.list_workflows(status=UNFINISHED, load_input=False, load_output=False):
        DBOS.cancel_workflow(status.workflow_id)
    launch.shutdown(workflow_completion_timeout_sec=10)


@pytest.fixture
def setup(dbos_env: DbosEnv) -> Setup:
    tenant = dbos_env.tenant()
    project = post_project(dbos_env.client, tenant)
    workflow = post_workflow(dbos_env.client, tenant, project["id"])
    return Setup(dbos_env, tenant, project["id"], workflow["id"])


def create_batch(setup: Setup, files: list[tuple[str, str, int]], **extra: Any) -> dict[str, Any]:
    """POST a batch declaring (name, content type, size) files; the 202 body."""
    body = {
        "project_id": setup.project_id,
        "workflow_id": setup.workflow_id,
        "documents": [{"name": n, "content_type": c, "size": s} for n, c, s in files],
        **extra,
    }
    response = setup.env.client.post("/v1/batches", json=body, headers=setup.tenant.headers)
    return ok(response, 202)


def upload_path(url: str) -> str:
    assert url.startswith(PUBLIC_BASE_URL + "/v1/uploads/"), url
    return url[len(PUBLIC_BASE_URL) :]


def submit(setup: Setup, files: list[tuple[str, str, bytes]], **extra: Any) -> dict[str, Any]:
    """Create a batch for `files` and PUT each file to its upload URL; the 202 body."""
    batch = create_batch(setup, [(n, c, len(data)) for n, c, data in files], **extra)
    for declared, (_, _, data) in zip(batch["documents"], files, strict=True):
        response = setup.env.client.put(upload_path(declared["upload_url"]), content=data)
        ok(response, 200)
    return batch


def get_batch(setup: Setup, batch_id: str) -> dict[str, Any]:
    return ok(setup.env.client.get(f"/v1/batches/{batch_id}", headers=setup.tenant.headers), 200)


def wait_terminal(setup: Setup, batch_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """Poll the batch until its status is terminal; its last state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        batch = get_batch(setup, batch_id)
        if batch["status"] not in ("CREATED", "PROCESSING"):
            return batch
        time.sleep(0.1)
    raise AssertionError(f"batch {batch_id} did not finish: {get_batch(setup, batch_id)}")


def documents(setup: Setup, batch_id: str) -> list[dict[str, Any]]:
    url = f"/v1/batches/{batch_id}/documents"
    page = ok(setup.env.client.get(url, params={"limit": 100}, headers=setup.tenant.headers), 200)
    items: list[dict[str, Any]] = page["items"]
    return items


def invoice_pdf(number: str, total: str) -> bytes:
    """A one-page text PDF with the fields the test workflow reads (`Invoice No`, `Total`)."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 12)
    pdf.drawString(50, A4[1] - 60, "Blue Harbour Trading Ltd")
    pdf.drawString(50, A4[1] - 120, f"Invoice No: {number}")
    pdf.drawString(50, A4[1] - 300, f"Total: {total}")
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def scanned_invoice(number: str, total: str, fmt: str = "PNG") -> bytes:
    """A scan-like image (no text layer) of the same invoice, read through real Tesseract."""
    image = Image.new("L", (1240, 1754), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype("DejaVuSans.ttf", 40)
    draw.text((100, 120), "Blue Harbour Trading Ltd", fill="black", font=font)
    draw.text((100, 300), f"Invoice No: {number}", fill="black", font=font)
    draw.text((100, 700), f"Total: {total}", fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, dpi=(150, 150))
    return buffer.getvalue()
