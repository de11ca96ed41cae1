"""`docflow batches submit` of a folder of 50 generated documents in distributed mode: a real
`docflow api` and a real `docflow worker` on PostgreSQL, files in S3 (moto's server), the
remote CLI uploading through the presigned POST forms and waiting for the end."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pytest
from typer.testing import CliRunner

from docflow import db
from docflow.cli import app
from docflow.client.cli import EXIT_BATCH
from docflow.config import Settings
from docflow.corpus.generate import INVOICE_LAYOUTS, generate_corpus
from docflow.extraction.workflow_file import load_workflow_file
from docflow.system_db import migrate_system_database
from support.api_fixtures import make_api_tenant, ok
from support.db_fixtures import APP_ROLE
from support.process_fixtures import (  # noqa: F401
    FreshPostgres,
    free_port,
    fresh_postgres,
    spawn,
    stop,
    wait_for,
)
from support.s3_server import S3Server, s3_server  # noqa: F401

COUNT = 50
BUCKET = "distributed"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TERMINAL = {"SUCCEEDED", "REVIEW_REQUIRED", "FAILED"}


def _ready(url: str) -> bool:
    try:
        answer = httpx.get(url, timeout=5.0)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200 and answer.json()["checks"].get("storage") == "ok"


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    """50 generated invoices (text PDFs; the corpus mixes in receipts, which are left out)."""
    generated, folder = tmp_path / "generated", tmp_path / "inbox"
    generate_corpus(generated, count=3 * COUNT, seed=16, kinds=["pdf"])
    folder.mkdir()
    invoices = [
        p for p in sorted(generated.glob("*.pdf")) if p.name.split("-")[0] in INVOICE_LAYOUTS
    ]
    for pdf in invoices[:COUNT]:
        shutil.copy(pdf, folder / pdf.name)
    assert len(list(folder.iterdir())) == COUNT
    return folder


@pytest.fixture
def deployment(
    fresh_postgres: FreshPostgres,  # noqa: F811
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> Iterator[str]:
    """One `docflow api` and one `docflow worker` sharing PostgreSQL and a bucket; the API's
    URL once its readiness (the bucket included) answers."""
    settings = Settings(
        database_url=fresh_postgres.app_url, migration_database_url=fresh_postgres.owner_url
    )
    migrate_system_database(settings, app_role=APP_ROLE)
    aws = s3_server.environment()
    boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint_url,
        aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"],
        region_name=aws["AWS_DEFAULT_REGION"],
    ).create_bucket(Bucket=BUCKET)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    storage = f"s3://{BUCKET}/files?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
    env = {
        **aws,
        "DOCFLOW_DATABASE_URL": fresh_postgres.app_url,
        "DOCFLOW_MIGRATION_DATABASE_URL": fresh_postgres.owner_url,
        "DOCFLOW_STORAGE_URL": storage,
        "DOCFLOW_SIGNING_SECRET": "distributed-test-signing-secret-0123456789",
        "DOCFLOW_PUBLIC_BASE_URL": base_url,
        "DOCFLOW_HOME": str(tmp_path / "home"),
    }
    log = tmp_path / "processes.log"
    run = ["-c", "from docflow.cli import app; app()"]
    api = spawn([*run, "api", "--port", str(port)], env, log)
    worker = spawn([*run, "worker"], {**env, "DOCFLOW_EXECUTOR_ID": "worker-1"}, log)
    try:
        wait_for(
            lambda: _ready(f"{base_url}/readyz") or api.poll() is not None,
            timeout=120,
            what="the API to be ready",
        )
        assert api.poll() is None and worker.poll() is None, log.read_text()[-3000:]
        yield base_url
    finally:
        stop(worker, timeout=30)
        stop(api, timeout=30)


@pytest.mark.postgres_only
@pytest.mark.slow
def test_submit_a_folder_of_50_in_distributed_mode(
    deployment: str,
    fresh_postgres: FreshPostgres,  # noqa: F811
    s3_server: S3Server,  # noqa: F811
    inbox: Path,
) -> None:
    engine = db.make_engine(fresh_postgres.app_url)
    try:
        tenant = make_api_tenant(db.make_write_session_factory(engine), "Distributed")
    finally:
        engine.dispose()
    headers = {"Authorization": f"Bearer {tenant.token}"}
    with httpx.Client(base_url=deployment, headers=headers, timeout=30) as http:
        project = ok(http.post("/v1/projects", json={"name": "Inbox"}), 201)
        definition = load_workflow_file(EXAMPLES / "invoice.yaml")
        # Decided by the thresholds until reviews measure its fields (docs/accuracy.md).
        body = {**definition.model_dump(mode="json", exclude_none=True), "cold_start": "thresholds"}
        workflow = ok(http.post(f"/v1/projects/{project['id']}/workflows", json=body), 201)
    args = ["batches", "submit", str(inbox), "--project", project["id"]]
    args += ["--workflow", workflow["id"], "--wait", "--timeout", "600", "--json"]
    env = {"DOCFLOW_URL": deployment, "DOCFLOW_API_KEY": tenant.token, "COLUMNS": "100"}
    result = CliRunner().invoke(app, args, env=env)
    summary = json.loads(result.stdout)
    batch, documents = summary["batch"], summary["documents"]
    assert result.exit_code == EXIT_BATCH.get(batch["status"], 0), (result.stdout, result.stderr)
    assert batch["document_count"] == batch["uploaded_count"] == COUNT
    assert batch["status"] in {"SUCCEEDED", "REVIEW_REQUIRED", "PARTIALLY_FAILED"}, [
        (d["status"], d["error_code"]) for d in documents
    ]
    assert sorted(d["name"] for d in documents) == sorted(p.name for p in inbox.iterdir())
    assert {d["status"] for d in documents} <= TERMINAL
    sizes = {d["name"]: d["size"] for d in documents}
    assert sizes == {p.name: p.stat().st_size for p in inbox.iterdir()}
    succeeded = sum(d["status"] == "SUCCEEDED" for d in documents)
    assert succeeded >= COUNT * 0.9, [d["error_code"] for d in documents]
    # Every original sits at a key of its own in the bucket; no posted object is left behind.
    aws = s3_server.environment()
    listed = boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint_url,
        aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"],
        region_name=aws["AWS_DEFAULT_REGION"],
    ).list_objects_v2(Bucket=BUCKET, Prefix=f"files/tenants/{tenant.tenant_id}/documents/")
    names = [item["Key"].rsplit("/", 1)[1] for item in listed.get("Contents", [])]
    assert sum(name.startswith("upload-") for name in names) == COUNT
    assert "original" not in names
