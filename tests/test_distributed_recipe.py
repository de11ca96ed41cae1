"""docs/operations.md's distributed recipe, followed from clean folders: the settings it lists,
`docflow migrate --create-app-role` on an empty database, the bucket made, a KEK made by
`docflow keys new-kek`, then `docflow api` and `docflow worker` started in production from two
different folders (so no home, no key, is shared by accident). A batch runs to the end, every
document read by the worker under the one configured key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pytest

from docflow import db
from docflow.client.remote import upload_request
from support.api_fixtures import make_api_tenant, ok, post_project, post_workflow
from support.db_fixtures import APP_ROLE, POSTGRES_ADMIN_URL, SYSTEM_ROLE
from support.dbos_fixtures import invoice_pdf
from support.process_fixtures import free_port, stop, wait_for
from support.s3_server import S3Server, s3_server  # noqa: F401

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

BUCKET = "recipe"
COUNT = 4
TERMINAL = {"SUCCEEDED", "REVIEW_REQUIRED", "FAILED", "PARTIALLY_FAILED", "CANCELLED"}


def _docflow(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """A `docflow` command run to its end in `cwd`; its output (it must succeed)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    done = subprocess.run(
        [sys.executable, "-m", "docflow.cli", *args],
        env={**clean, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


@pytest.fixture
def database() -> Iterator[str]:
    """An empty database: its owner's URL."""
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_recipe") as owner_url:
        yield owner_url


def _ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5.0).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_distributed_recipe_from_clean_folders(
    database: str,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    api_dir, worker_dir, admin_dir = (tmp_path / n for n in ("api", "worker", "admin"))
    for folder in (api_dir, worker_dir, admin_dir):
        folder.mkdir()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    kek = tmp_path / "secrets" / "kek"
    aws = s3_server.environment()
    # The settings the recipe lists for every process.
    env = {
        **aws,
        "DOCFLOW_ENV": "production",
        "DOCFLOW_DATABASE_URL": db.role_url(database, APP_ROLE),
        "DOCFLOW_SYSTEM_DATABASE_URL": db.role_url(database, SYSTEM_ROLE),
        "DOCFLOW_STORAGE_URL": (
            f"s3://{BUCKET}/files?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
        ),
        "DOCFLOW_KEK_URL": f"file://{kek}",
        "DOCFLOW_SIGNING_SECRET": "recipe-signing-secret-0123456789abcdefghij",
        "DOCFLOW_PUBLIC_BASE_URL": base_url,
    }
    assert set(_documented_settings()) == {k for k in env if k.startswith("DOCFLOW_")}
    env["DOCFLOW_QUEUE_POLLING_SECONDS"] = "0.2"  # the test's own: quicker turns
    # Once per deployment: the bucket, the KEK, the schema and the roles.
    boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint_url,
        aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"],
        region_name=aws["AWS_DEFAULT_REGION"],
    ).create_bucket(Bucket=BUCKET)
    kek.parent.mkdir()
    _docflow(["keys", "new-kek", str(kek)], env, admin_dir)
    owner = {**env, "DOCFLOW_MIGRATION_DATABASE_URL": database}
    _docflow(["migrate", "--create-app-role"], owner, admin_dir)

    log = tmp_path / "processes.log"
    api = _start(api_dir, ["api", "--port", str(port)], env, log)
    worker = _start(worker_dir, ["worker"], {**env, "DOCFLOW_EXECUTOR_ID": "worker-1"}, log)
    try:
        wait_for(
            lambda: _ready(f"{base_url}/readyz") or api.poll() is not None,
            timeout=120,
            what="the API to be ready",
        )
        assert api.poll() is None and worker.poll() is None, log.read_text()[-3000:]
        _run_a_batch(database, base_url)
    finally:
        stop(worker, timeout=30)
        stop(api, timeout=30)
    # Neither process made a key of its own in its folder.
    assert not list(api_dir.rglob("kek")) and not list(worker_dir.rglob("kek"))


def _documented_settings() -> list[str]:
    """The settings docs/operations.md's distributed recipe exports for every process."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "operations.md").read_text()
    recipe = text.split("# On every machine, for every process:", 1)[1].split("# Once", 1)[0]
    return re.findall(r"^export (DOCFLOW_[A-Z_]+)=", recipe, flags=re.MULTILINE)


def _start(cwd: Path, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`docflow ARGS` started in `cwd` with only `env`'s docflow settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", *args],
            env={**clean, **env},
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _run_a_batch(owner_url: str, base_url: str) -> None:
    engine = db.make_engine(db.role_url(owner_url, APP_ROLE))
    try:
        tenant = make_api_tenant(db.make_write_session_factory(engine), "Recipe")
    finally:
        engine.dispose()
    headers = {"Authorization": f"Bearer {tenant.token}"}
    with httpx.Client(base_url=base_url, timeout=30) as http:
        project = post_project(http, tenant)  # type: ignore[arg-type]
        workflow = post_workflow(http, tenant, project["id"])  # type: ignore[arg-type]
        files = [invoice_pdf(f"INV-{5000 + i}", f"{i + 1}.00") for i in range(COUNT)]
        documents = [
            {"name": f"r{i}.pdf", "content_type": "application/pdf", "size": len(data)}
            for i, data in enumerate(files)
        ]
        body = {"project_id": project["id"], "workflow_id": workflow["id"], "documents": documents}
        batch = ok(http.post("/v1/batches", json=body, headers=headers), 202)
        for declared, data in zip(batch["documents"], files, strict=True):
            method, url, sent = upload_request(declared, data, filename="r.pdf", size=len(data))
            assert httpx.request(method, url, **sent).status_code == 204
            confirm = f"/v1/documents/{declared['id']}/uploaded"
            ok(http.post(confirm, headers=headers), 200)
        wait_for(
            lambda: (
                http.get(f"/v1/batches/{batch['id']}", headers=headers).json()["status"] in TERMINAL
            ),
            timeout=180,
            what="the batch to end",
        )
        listed = ok(http.get(f"/v1/batches/{batch['id']}/documents", headers=headers), 200)
    outcome = [(d["name"], d["status"], d["error_code"]) for d in listed["items"]]
    assert all(status == "SUCCEEDED" for _, status, _ in outcome), outcome
