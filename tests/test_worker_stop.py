"""A real `docflow worker` stopped by SIGTERM in the middle of a batch of scans: it exits 0 and
logs no error (the documents it was reading are interrupted, logged at info level, and a second
worker finishes them)."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from docflow import db
from docflow.config import Settings
from docflow.corpus.generate import generate_corpus
from docflow.system_db import migrate_system_database
from support.api_fixtures import make_api_tenant, ok, workflow_body
from support.db_fixtures import APP_ROLE
from support.process_fixtures import (  # noqa: F401
    FreshPostgres,
    answers,
    errors_in,
    free_port,
    fresh_postgres,
    spawn,
    stop,
    wait_for,
)

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

SCANS = 12
TERMINAL = {"SUCCEEDED", "REVIEW_REQUIRED", "PARTIALLY_FAILED", "FAILED"}


def _submit(base_url: str, token: str, folder: Path) -> str:
    files = sorted(folder.glob("*.jpg"))
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as http:
        project = ok(http.post("/v1/projects", json={"name": "Stop"}), 201)
        path = f"/v1/projects/{project['id']}/workflows"
        workflow = ok(http.post(path, json=workflow_body("stop")), 201)
        documents = [
            {"name": f.name, "content_type": "image/jpeg", "size": f.stat().st_size} for f in files
        ]
        body = {"project_id": project["id"], "workflow_id": workflow["id"], "documents": documents}
        batch = ok(http.post("/v1/batches", json=body), 202)
        for target, file in zip(batch["documents"], files, strict=True):
            put = httpx.put(
                target["upload_url"],
                content=file.read_bytes(),
                headers={"Content-Type": "image/jpeg"},
                timeout=30,
            )
            assert put.status_code == 200, put.text
    return str(batch["id"])


def _batch(base_url: str, token: str, batch_id: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    return ok(httpx.get(f"{base_url}/v1/batches/{batch_id}", headers=headers, timeout=10), 200)


def _done(batch: dict[str, Any]) -> int:
    return int(batch["succeeded_count"] + batch["review_count"] + batch["failed_count"])


def test_a_worker_stopped_mid_batch_logs_no_error(
    fresh_postgres: FreshPostgres,  # noqa: F811
    tmp_path: Path,
) -> None:
    pg = fresh_postgres
    settings = Settings(database_url=pg.app_url, migration_database_url=pg.owner_url)
    migrate_system_database(settings, app_role=APP_ROLE)
    port = free_port()
    env = {
        "DOCFLOW_DATABASE_URL": pg.app_url,
        "DOCFLOW_MIGRATION_DATABASE_URL": pg.owner_url,
        "DOCFLOW_HOME": str(tmp_path / "home"),
        "DOCFLOW_STORAGE_URL": f"file://{tmp_path / 'files'}",
        "DOCFLOW_PORT": str(port),
    }
    engine = db.make_engine(pg.app_url)
    try:
        tenant = make_api_tenant(db.make_write_session_factory(engine), "Worker stop")
    finally:
        engine.dispose()
    generated = tmp_path / "generated"
    generate_corpus(generated, count=SCANS, seed=11, kinds=["scan"])
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for scan in generated.glob("*.jpg"):
        shutil.copy(scan, inbox / scan.name)

    base_url = f"http://127.0.0.1:{port}"
    api = spawn(["-m", "docflow.cli", "api"], env, tmp_path / "api.log")
    first_log, second_log = tmp_path / "worker-1.log", tmp_path / "worker-2.log"
    try:
        wait_for(lambda: answers(f"{base_url}/healthz"), timeout=60, what="docflow api")
        first = spawn(["-m", "docflow.cli", "worker"], env, first_log)
        try:
            batch_id = _submit(base_url, tenant.token, inbox)
            wait_for(
                lambda: _done(_batch(base_url, tenant.token, batch_id)) >= 1,
                timeout=120,
                what="a first document to be read",
            )
            first.send_signal(signal.SIGTERM)
            first.wait(timeout=120)
        finally:
            stop(first)
        stopped_at = _batch(base_url, tenant.token, batch_id)
        assert first.returncode == 0, first_log.read_text()[-3000:]
        assert _done(stopped_at) < SCANS, "the batch ended before the worker was stopped"
        output = first_log.read_text(errors="replace")
        assert "worker.stopped" in output
        assert errors_in(output) == [], output[-4000:]

        second = spawn(["-m", "docflow.cli", "worker"], env, second_log)
        try:
            wait_for(
                lambda: _batch(base_url, tenant.token, batch_id)["status"] in TERMINAL,
                timeout=240,
                what=f"a second worker to finish the batch ({second_log})",
                interval=0.5,
            )
            finished = _batch(base_url, tenant.token, batch_id)
        finally:
            stop(second, timeout=60)
    finally:
        stop(api)
    # Every document was read to its end once, the interrupted ones by the second worker.
    assert _done(finished) == finished["document_count"] == SCANS
    assert errors_in(second_log.read_text(errors="replace")) == []
