"""The remote commands of `docflow` (batches submit|list|show|results, documents, workflows)
run through the real CLI against a real `docflow serve` process, over HTTP: on SQLite a served
home of its own, on PostgreSQL a fresh database served by the same command."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from click.testing import Result
from typer.testing import CliRunner

from docflow import db
from docflow.cli import app
from docflow.client.cli import EXIT_BATCH
from docflow.config import Settings
from docflow.corpus.generate import INVOICE_LAYOUTS, generate_corpus
from docflow.extraction.workflow_file import load_workflow_file
from docflow.system_db import migrate_system_database
from support.api_fixtures import make_api_tenant, ok
from support.db_fixtures import APP_ROLE, POSTGRES_ADMIN_URL, SYSTEM_ROLE, on_postgres
from support.process_fixtures import free_port, served
from support.s3_server import S3Server, s3_server  # noqa: F401

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ID = r"[0-9a-z]{26}"
runner = CliRunner()


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    project_id: str
    workflow_id: str
    tenant_id: str
    database_url: str
    # The server's DOCFLOW_SOURCES_ROOT (watched folders).
    sources_root: Path | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"DOCFLOW_URL": self.url, "DOCFLOW_API_KEY": self.token, "COLUMNS": "100"}


@contextmanager
def _postgres_env(tmp: Path) -> Iterator[dict[str, str]]:
    """A fresh PostgreSQL database for the server, with DBOS's tables (dropped after)."""
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_cli") as owner_url:
        db.ensure_app_role(owner_url, APP_ROLE)
        db.ensure_system_role(owner_url, SYSTEM_ROLE)
        db.run_migrations(owner_url, app_role=APP_ROLE)
        app_url = db.role_url(owner_url, APP_ROLE)
        settings = Settings(database_url=app_url, migration_database_url=owner_url)
        migrate_system_database(settings, app_role=APP_ROLE)
        yield {
            "DOCFLOW_DATABASE_URL": app_url,
            "DOCFLOW_MIGRATION_DATABASE_URL": owner_url,
            "DOCFLOW_STORAGE_URL": f"file://{tmp / 'files'}",
        }


def _prepare(base_url: str, database_url: str) -> Server:
    """A tenant and its key (made in the database, as `docflow tenants create` does), a project
    and the invoice workflow of examples/ (made through the API)."""
    engine = db.make_engine(database_url)
    try:
        tenant = make_api_tenant(db.make_write_session_factory(engine), "Remote CLI")
    finally:
        engine.dispose()
    headers = {"Authorization": f"Bearer {tenant.token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as http:
        project = ok(http.post("/v1/projects", json={"name": "Daily"}), 201)
        definition = load_workflow_file(EXAMPLES / "invoice.yaml")
        # Decided by the thresholds until reviews measure its fields (docs/accuracy.md).
        body = {**definition.model_dump(mode="json", exclude_none=True), "cold_start": "thresholds"}
        path = f"/v1/projects/{project['id']}/workflows"
        workflow = ok(http.post(path, json=body), 201)
    return Server(
        base_url, tenant.token, project["id"], workflow["id"], tenant.tenant_id, database_url
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`docflow serve` (on SQLite in its own home, or on a fresh PostgreSQL database), with a
    tenant, a project and a workflow."""
    tmp = tmp_path_factory.mktemp("remote")
    with ExitStack() as stack:
        env = stack.enter_context(_postgres_env(tmp)) if on_postgres() else {}
        root = tmp / "watched"
        env = {**env, "DOCFLOW_SOURCES_ROOT": str(root)}
        running = stack.enter_context(served(tmp / "home", tmp / "serve.log", env))
        url = env.get("DOCFLOW_DATABASE_URL") or f"sqlite:///{running.home / 'docflow.db'}"
        yield replace(_prepare(running.base_url, url), sources_root=root)


@pytest.fixture(scope="module")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of three generated PDFs (their labels kept elsewhere)."""
    generated = tmp_path_factory.mktemp("generated")
    generate_corpus(generated, count=3, seed=7, kinds=["pdf"])
    folder = tmp_path_factory.mktemp("inbox")
    for pdf in sorted(generated.glob("*.pdf")):
        shutil.copy(pdf, folder / pdf.name)
    return folder


def cli(server: Server, *args: str, code: int | None = 0, **env: str) -> Result:
    """The command's result; `code=None` leaves its exit status to the caller."""
    result = runner.invoke(app, list(args), env={**server.env, **env})
    assert code is None or result.exit_code == code, (result.stdout, result.stderr)
    assert server.token not in result.output
    assert "Traceback" not in result.output
    return result


@pytest.fixture(scope="module")
def submitted(server: Server, inbox: Path) -> dict[str, Any]:
    """The inbox submitted as one batch with --wait, its summary read as JSON."""
    result = cli(
        server,
        "batches",
        "submit",
        str(inbox),
        "--project",
        server.project_id,
        "--workflow",
        server.workflow_id,
        "--wait",
        "--timeout",
        "300",
        "--json",
        code=None,
    )
    summary: dict[str, Any] = json.loads(result.stdout)
    assert result.exit_code == EXIT_BATCH.get(summary["batch"]["status"], 0)
    return summary


def test_submit_uploads_a_folder_and_waits_for_the_end(
    server: Server, inbox: Path, submitted: dict[str, Any]
) -> None:
    batch, documents = submitted["batch"], submitted["documents"]
    assert batch["status"] in {"SUCCEEDED", "REVIEW_REQUIRED", "PARTIALLY_FAILED", "FAILED"}
    assert batch["document_count"] == batch["uploaded_count"] == 3
    assert sorted(d["name"] for d in documents) == sorted(p.name for p in inbox.iterdir())
    assert all(d["status"] != "PENDING_UPLOAD" for d in documents)
    assert all(d["content_type"] == "application/pdf" for d in documents)
    assert "upload_url" not in json.dumps(submitted)  # the upload URLs are credentials


def test_submit_shows_progress_on_stderr_and_a_table_on_stdout(server: Server, inbox: Path) -> None:
    one = sorted(inbox.iterdir())[0]
    result = cli(
        server,
        "batches",
        "submit",
        str(one),
        "--project",
        server.project_id,
        "--workflow",
        server.workflow_id,
        "--wait",
    )
    assert "uploading" in result.stderr and "1/1" in result.stderr
    assert "uploading" not in result.stdout
    assert one.name in result.stdout
    assert "status" in result.stdout


def test_batches_list_and_show_in_table_json_and_csv(
    server: Server, submitted: dict[str, Any]
) -> None:
    batch_id = submitted["batch"]["id"]
    table = cli(server, "batches", "list", "--project", server.project_id).stdout
    assert batch_id in table and server.workflow_id in table  # whole ids, at 100 columns
    listed = json.loads(cli(server, "batches", "list", "--json").stdout)
    assert batch_id in [b["id"] for b in listed]
    rows = list(csv.DictReader(io.StringIO(cli(server, "batches", "list", "-o", "csv").stdout)))
    ours = next(row for row in rows if row["id"] == batch_id)
    assert ours["status"] == submitted["batch"]["status"] and ours["documents"] == "3"
    assert ours["cancelled"] == "0" and ours["completed_at"]
    # only this status: the list keeps it
    status = submitted["batch"]["status"]
    filtered = json.loads(cli(server, "batches", "list", "--status", status, "--json").stdout)
    assert filtered and {b["status"] for b in filtered} == {status}
    # by workflow and creation period, as GET /v1/batches filters them
    created = submitted["batch"]["created_at"]
    mine = ("--workflow", server.workflow_id, "--since", created, "--json")
    found = json.loads(cli(server, "batches", "list", *mine).stdout)
    assert batch_id in [b["id"] for b in found]
    assert all(b["workflow_id"] == server.workflow_id and b["created_at"] >= created for b in found)
    later = ("--until", created, "--json")
    assert batch_id not in [
        b["id"] for b in json.loads(cli(server, "batches", "list", *later).stdout)
    ]
    other = ("--workflow", "wfl_00000000000000000000000000", "--json")
    assert json.loads(cli(server, "batches", "list", *other).stdout) == []
    naive = cli(server, "batches", "list", "--since", "2026-01-01T00:00:00", code=1)
    assert "field since" in naive.stderr

    shown = cli(server, "batches", "show", batch_id).stdout
    assert batch_id in shown and "succeeded_count" in shown
    assert json.loads(cli(server, "batches", "show", batch_id, "--json").stdout)["id"] == batch_id
    rows = list(
        csv.DictReader(io.StringIO(cli(server, "batches", "show", batch_id, "-o", "csv").stdout))
    )
    assert len(rows) == 1 and rows[0]["id"] == batch_id and rows[0]["document_count"] == "3"


def test_batch_results_give_every_documents_values(
    server: Server, submitted: dict[str, Any]
) -> None:
    batch_id = submitted["batch"]["id"]
    results = json.loads(cli(server, "batches", "results", batch_id, "--json").stdout)
    assert [r["id"] for r in results] == [d["id"] for d in submitted["documents"]]
    read = [r for r in results if r["result"] is not None]
    assert read, results
    rows = list(
        csv.DictReader(io.StringIO(cli(server, "batches", "results", batch_id, "-o", "csv").stdout))
    )
    assert [row["document_id"] for row in rows] == [r["id"] for r in results]
    for row, result in zip(rows, results, strict=True):
        fields = (result["result"] or {}).get("fields") or {}
        for name, field in fields.items():
            expected = "" if field["value"] is None else str(field["value"])
            assert row[name] == expected
    assert "invoice_number" in rows[0]
    table = cli(server, "batches", "results", batch_id).stdout
    assert all(r["id"] in table for r in results)


def test_documents_list_show_and_result_download(
    server: Server, submitted: dict[str, Any], tmp_path: Path
) -> None:
    batch_id = submitted["batch"]["id"]
    ids = [d["id"] for d in submitted["documents"]]
    listed = json.loads(cli(server, "documents", "list", "--batch", batch_id, "--json").stdout)
    assert [d["id"] for d in listed] == ids
    table = cli(server, "documents", "list", "--batch", batch_id).stdout
    assert all(i in table for i in ids)
    rows = list(
        csv.DictReader(
            io.StringIO(cli(server, "documents", "list", "--batch", batch_id, "-o", "csv").stdout)
        )
    )
    assert [row["id"] for row in rows] == ids
    newest = json.loads(cli(server, "documents", "list", "--limit", "2", "--json").stdout)
    assert len(newest) == 2

    document = next(d for d in submitted["documents"] if d["status"] != "FAILED")
    shown = json.loads(cli(server, "documents", "show", document["id"], "--json").stdout)
    assert shown["id"] == document["id"] and shown["result"] is not None
    table = cli(server, "documents", "show", document["id"]).stdout
    assert document["id"] in table and "invoice_number" in table

    target = tmp_path / "result.json"
    cli(server, "documents", "download", document["id"], "--result", "--out", str(target))
    assert json.loads(target.read_text()) == shown["result"]
    refused = cli(
        server, "documents", "download", document["id"], "--result", "--out", str(target), code=1
    )
    assert "exists" in refused.stderr
    to_stdout = cli(server, "documents", "download", document["id"], "--result", "--out", "-")
    assert json.loads(to_stdout.stdout) == shown["result"]


def test_original_download(
    server: Server, submitted: dict[str, Any], inbox: Path, tmp_path: Path
) -> None:
    document = submitted["documents"][0]
    cli(server, "documents", "download", document["id"], "--out", str(tmp_path))
    original = (inbox / document["name"]).read_bytes()
    assert (tmp_path / document["name"]).read_bytes() == original
    # A path ending in a separator is a folder, made if need be: not a file named like it.
    folder = tmp_path / "new" / "dir"
    cli(server, "documents", "download", document["id"], "--out", f"{folder}{os.sep}")
    assert folder.is_dir() and (folder / document["name"]).read_bytes() == original
    cli(server, "documents", "download", document["id"], "--result", "--out", f"{folder}/")
    assert (folder / f"{Path(document['name']).stem}.json").is_file()
    # Without one, a path that is not a folder is the file to write.
    named = tmp_path / "new" / "copy.pdf"
    cli(server, "documents", "download", document["id"], "--out", str(named))
    assert named.read_bytes() == original


def test_a_finished_batch_is_not_cancelled_but_deleted(server: Server, inbox: Path) -> None:
    one = sorted(inbox.iterdir())[0]
    args = ["--project", server.project_id, "--workflow", server.workflow_id, "--wait", "--json"]
    batch = json.loads(cli(server, "batches", "submit", str(one), *args).stdout)["batch"]
    refused = cli(server, "batches", "cancel", batch["id"], code=1)
    assert "batch_finished" in refused.stderr and refused.stdout == ""
    deleted = cli(server, "batches", "delete", batch["id"])
    assert deleted.stdout.strip() == f"deleted {batch['id']}"
    gone = cli(server, "batches", "show", batch["id"], code=1)
    assert "not_found" in gone.stderr


def test_a_document_of_a_finished_batch_is_deleted(server: Server, inbox: Path) -> None:
    two = [str(p) for p in sorted(inbox.iterdir())[:2]]
    args = ["--project", server.project_id, "--workflow", server.workflow_id, "--wait", "--json"]
    submitted = json.loads(cli(server, "batches", "submit", *two, *args).stdout)
    batch, (deleted, kept) = submitted["batch"], submitted["documents"]
    done = cli(server, "documents", "delete", deleted["id"])
    assert done.stdout.strip() == f"deleted {deleted['id']}"
    headers = {"Authorization": f"Bearer {server.token}"}
    gone = httpx.get(f"{server.url}/v1/documents/{deleted['id']}", headers=headers)
    assert gone.status_code == 404
    left = ok(httpx.get(f"{server.url}/v1/batches/{batch['id']}", headers=headers), 200)
    assert left["document_count"] == 1
    assert ok(httpx.get(f"{server.url}/v1/documents/{kept['id']}", headers=headers), 200)
    again = cli(server, "documents", "delete", deleted["id"], code=1)
    assert "not_found" in again.stderr and again.stdout == ""


def test_a_project_with_batches_is_deleted_only_with_cascade(server: Server) -> None:
    refused = cli(server, "projects", "delete", server.project_id, code=1)
    assert "conflict" in refused.stderr  # the shared project keeps its batches
    headers = {"Authorization": f"Bearer {server.token}"}
    project = httpx.post(f"{server.url}/v1/projects", json={"name": "empty"}, headers=headers)
    assert project.status_code == 201, project.text
    project_id = project.json()["id"]
    deleted = cli(server, "projects", "delete", project_id, "--cascade")
    assert deleted.stdout.strip() == f"deleted {project_id}"
    assert httpx.get(f"{server.url}/v1/projects/{project_id}", headers=headers).status_code == 404


def test_projects_update_sets_and_clears_the_retention(server: Server) -> None:
    headers = {"Authorization": f"Bearer {server.token}"}
    project = ok(
        httpx.post(f"{server.url}/v1/projects", json={"name": "kept"}, headers=headers), 201
    )
    args = ["projects", "update", project["id"]]
    shown = json.loads(cli(server, *args, "--retention-days", "30", "--json").stdout)
    assert (shown["id"], shown["retention_days"]) == (project["id"], 30)
    table = cli(server, *args, "--name", "kept a month").stdout
    assert "retention_days" in table and "30" in table and "kept a month" in table
    cleared = json.loads(cli(server, *args, "--keep-forever", "-o", "json").stdout)
    assert cleared["retention_days"] is None
    refused = cli(server, *args, "--retention-days", "0", code=1)
    assert "field retention_days" in refused.stderr
    both = cli(server, *args, "--retention-days", "3", "--keep-forever", code=1)
    assert "not both" in both.stderr
    assert "nothing to change" in cli(server, *args, code=1).stderr


def test_workflows_list_and_show(server: Server) -> None:
    table = cli(server, "workflows", "list", "--project", server.project_id).stdout
    assert server.workflow_id in table and "invoice" in table
    listed = json.loads(
        cli(server, "workflows", "list", "--project", server.project_id, "--json").stdout
    )
    assert [w["id"] for w in listed] == [server.workflow_id]
    rows = list(
        csv.DictReader(
            io.StringIO(
                cli(server, "workflows", "list", "--project", server.project_id, "-o", "csv").stdout
            )
        )
    )
    assert rows[0]["id"] == server.workflow_id and rows[0]["version"] == "1"
    shown = cli(server, "workflows", "show", server.workflow_id).stdout
    assert server.workflow_id in shown and "invoice_number" in shown and "regex" in shown
    body = json.loads(cli(server, "workflows", "show", server.workflow_id, "--json").stdout)
    assert body["definition"]["name"] == "invoice"


def test_workflows_trust_shows_each_fields_examples_cut_and_automation(server: Server) -> None:
    table = cli(server, "workflows", "trust", server.workflow_id).stdout
    assert "target_precision" in table and "0.98" in table
    assert "invoice_number" in table and "automation_rate" in table
    body = json.loads(cli(server, "workflows", "trust", server.workflow_id, "--json").stdout)
    assert body["workflow_id"] == server.workflow_id and body["version"] == 1
    assert {f["name"] for f in body["fields"]} >= {"invoice_number"}
    assert all(f["examples"] == 0 and f["cut"] is None for f in body["fields"])
    rows = list(
        csv.DictReader(
            io.StringIO(cli(server, "workflows", "trust", server.workflow_id, "-o", "csv").stdout)
        )
    )
    assert rows[0]["field"] == "invoice_number" and rows[0]["cut"] == ""


def test_a_bad_workflow_id_is_the_problems_detail_and_exit_1(server: Server, inbox: Path) -> None:
    result = cli(
        server,
        "batches",
        "submit",
        str(inbox),
        "--project",
        server.project_id,
        "--workflow",
        "wfl_00000000000000000000000000",
        code=1,
    )
    assert result.stdout == ""
    assert result.stderr.startswith("error: workflow not found (not_found")
    shown = cli(server, "workflows", "show", "wfl_00000000000000000000000000", code=1)
    assert "error: workflow not found (not_found" in shown.stderr
    bad = cli(server, "batches", "list", "--status", "NOPE", code=1)
    assert "field status" in bad.stderr


def test_a_wrong_key_is_401_and_exit_1(server: Server) -> None:
    wrong = "dfk_wrongwrongwr_wrongwrongwrongwrongwrongwrong"
    result = cli(server, "batches", "list", code=1, DOCFLOW_API_KEY=wrong)
    assert "(unauthorized)" in result.stderr and result.stdout == ""
    assert wrong not in result.output


def test_no_server_is_exit_2(server: Server) -> None:
    result = cli(server, "batches", "list", code=2, DOCFLOW_URL=f"http://127.0.0.1:{free_port()}")
    assert result.stderr.startswith("error: cannot reach http://127.0.0.1:")
    missing = runner.invoke(
        app,
        ["workflows", "list", "--project", "prj_x"],
        env={"DOCFLOW_URL": "", "DOCFLOW_API_KEY": "", "DOCFLOW_CONFIG": "/nonexistent/cli.toml"},
    )
    assert missing.exit_code == 2 and "error: no server" in missing.stderr


def test_a_profile_of_the_configuration_file(server: Server, tmp_path: Path) -> None:
    config = tmp_path / "cli.toml"
    config.write_text(
        'default_profile = "broken"\n'
        "[profiles.broken]\n"
        f'url = "http://127.0.0.1:{free_port()}"\n'
        'api_key = "dfk_nothing"\n'
        "[profiles.daily]\n"
        f'url = "{server.url}"\n'
        f'api_key = "{server.token}"\n'
    )
    env = {"DOCFLOW_URL": "", "DOCFLOW_API_KEY": "", "DOCFLOW_CONFIG": str(config)}
    args = ["workflows", "list", "--project", server.project_id, "--json"]
    listed = cli(server, *args, "--profile", "daily", **env)
    assert [w["id"] for w in json.loads(listed.stdout)] == [server.workflow_id]
    cli(server, *args, code=2, **env)  # the default profile: nothing answers there
    unknown = cli(server, *args, "--profile", "nope", code=2, **env)
    assert "no profile 'nope'" in unknown.stderr and "daily" in unknown.stderr
    # the environment wins over the profile
    cli(server, *args, DOCFLOW_CONFIG=str(config))


def test_operator_commands_say_they_are_local() -> None:
    batches = runner.invoke(app, ["batches", "--help"], env={"COLUMNS": "200"})
    assert "Operator: on the local database" in batches.stdout
    assert "Remote: through the HTTP API" in batches.stdout
    projects = runner.invoke(app, ["projects", "--help"], env={"COLUMNS": "200"})
    assert "Operator: on the local database" in projects.stdout
    assert "Remote: through the HTTP API" in projects.stdout
    workflows = runner.invoke(app, ["workflows", "--help"], env={"COLUMNS": "200"})
    assert "Commands" not in workflows.stdout  # each one under its heading
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "400"})
    assert "batches submit|list|show|results|cancel|delete" in top.stdout
    submit = runner.invoke(app, ["batches", "submit", "--help"], env={"COLUMNS": "200"})
    assert "DOCFLOW_URL" in submit.stdout and "DOCFLOW_API_KEY" in submit.stdout


def test_submit_in_s3_mode_confirms_each_upload(
    s3_server: S3Server,  # noqa: F811
    inbox: Path,
    tmp_path: Path,
) -> None:
    """With S3 storage the upload targets are presigned S3 POST forms: the CLI confirms each
    upload (`POST /v1/documents/{id}/uploaded`), so the batch starts at once rather than when
    the per-minute scheduler finds the files."""
    aws = s3_server.environment()
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, **_boto(aws)).create_bucket(
        Bucket="cli"
    )
    env = {**aws, "DOCFLOW_STORAGE_URL": f"s3://cli?endpoint_url={s3_server.endpoint_url}"}
    with served(tmp_path / "home", tmp_path / "serve.log", env) as running:
        server = _prepare(running.base_url, f"sqlite:///{running.home / 'docflow.db'}")
        one = sorted(inbox.iterdir())[:2]
        args = ["--project", server.project_id, "--workflow", server.workflow_id]
        result = cli(server, "batches", "submit", *map(str, one), *args, "--json")
        summary = json.loads(result.stdout)
        # recorded as the command ends, not at the scheduler's next look
        assert summary["batch"]["uploaded_count"] == 2
        sizes = {d["name"]: d["size"] for d in summary["documents"]}
        assert sizes == {path.name: path.stat().st_size for path in one}


def _boto(aws: dict[str, str]) -> dict[str, str]:
    return {
        "aws_access_key_id": aws["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": aws["AWS_SECRET_ACCESS_KEY"],
        "region_name": aws["AWS_DEFAULT_REGION"],
    }


FIFTY = 50


def test_submit_a_folder_of_fifty_generated_documents_end_to_end(
    server: Server, tmp_path: Path
) -> None:
    generated = generate_corpus(tmp_path / "generated", count=FIFTY, seed=50, kinds=["pdf"])
    folder = tmp_path / "fifty"
    folder.mkdir()
    for document in generated:
        shutil.copy(tmp_path / "generated" / f"{document.name}.pdf", folder)
    submit = ("batches", "submit", str(folder), "--project", server.project_id)
    result = cli(
        server,
        *submit,
        "--workflow",
        server.workflow_id,
        "--concurrency",
        "8",
        "--wait",
        "--timeout",
        "300",
        "--json",
        code=None,
    )
    assert f"{FIFTY}/{FIFTY}" in result.stderr  # every upload, on the progress bar
    summary = json.loads(result.stdout)
    batch, documents = summary["batch"], summary["documents"]
    assert result.exit_code == EXIT_BATCH.get(batch["status"], 0)  # 5 when some failed
    assert batch["document_count"] == batch["uploaded_count"] == FIFTY
    done = batch["succeeded_count"] + batch["review_count"] + batch["failed_count"]
    assert done == FIFTY and len(documents) == FIFTY
    assert sorted(d["name"] for d in documents) == sorted(p.name for p in folder.iterdir())

    # The invoices (4 of the corpus's 7 layouts) read to their printed totals under the invoice
    # workflow; the receipts are read too, each to a terminal status.
    rows = csv.DictReader(
        io.StringIO(cli(server, "batches", "results", batch["id"], "-o", "csv").stdout)
    )
    by_name = {row["name"]: row for row in rows}
    assert len(by_name) == FIFTY
    invoices = [d for d in generated if d.layout in INVOICE_LAYOUTS]
    assert len(invoices) >= 28
    for document in invoices:
        row = by_name[f"{document.name}.pdf"]
        assert row["status"] == "SUCCEEDED", row
        assert row["total"] == document.truth["fields"]["total"], row
    assert {row["status"] for row in by_name.values()} <= {"SUCCEEDED", "REVIEW_REQUIRED", "FAILED"}


def test_a_suspended_tenants_remote_commands_are_refused_until_it_is_resumed(
    server: Server, tmp_path: Path
) -> None:
    # The operator's commands on the server's database, the remote ones through its API.
    operator = {"DOCFLOW_DATABASE_URL": server.database_url, "DOCFLOW_HOME": str(tmp_path)}
    status = ("tenants", "show", server.tenant_id, "--json")
    try:
        cli(server, "tenants", "suspend", server.tenant_id, "--reason", "overdue", **operator)
        assert json.loads(cli(server, *status, **operator).stdout)["status"] == "suspended"
        # The server trusts a key it verified for up to 5 s: within that, it is refused.
        deadline = time.monotonic() + 10
        while True:
            refused = runner.invoke(app, ["batches", "list", "--json"], env=server.env)
            if refused.exit_code != 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert refused.exit_code == 1, refused.stdout
        assert "suspended" in refused.stderr and "(tenant_suspended)" in refused.stderr
        assert refused.stdout == ""
    finally:
        cli(server, "tenants", "resume", server.tenant_id, **operator)
    assert json.loads(cli(server, *status, **operator).stdout)["status"] == "active"
    cli(server, "batches", "list", "--json")


def test_sources_commands_watch_a_folder_and_poll_it(server: Server, inbox: Path) -> None:
    assert server.sources_root is not None
    folder = server.sources_root / server.tenant_id / "drop"
    folder.mkdir(parents=True)
    settled = time.time() - 60  # copied a minute ago: past the settle time, taken at once
    for pdf in sorted(inbox.glob("*.pdf"))[:2]:
        shutil.copy(pdf, folder / pdf.name)
        os.utime(folder / pdf.name, (settled, settled))
    project = ("--project", server.project_id)
    created = json.loads(
        cli(
            server,
            "sources",
            "create",
            "drop",
            *project,
            "--workflow",
            server.workflow_id,
            "--cron",
            "0 0 1 1 *",
            "--move-after",
            "--json",
        ).stdout
    )
    assert (created["path"], created["move_after"], created["healthy"]) == ("drop", True, True)
    source_id = created["id"]
    listed = json.loads(cli(server, "sources", "list", *project, "--json").stdout)
    assert [s["id"] for s in listed] == [source_id]
    paused = json.loads(cli(server, "sources", "pause", source_id, *project, "--json").stdout)
    assert (paused["paused"], paused["next_poll_at"]) == (True, None)
    resumed = json.loads(cli(server, "sources", "resume", source_id, *project, "--json").stdout)
    assert resumed["paused"] is False and resumed["next_poll_at"] is not None
    run_id = json.loads(cli(server, "sources", "poll", source_id, *project, "--json").stdout)[
        "run_id"
    ]
    deadline = time.monotonic() + 120
    runs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        runs = json.loads(cli(server, "sources", "runs", source_id, *project, "--json").stdout)
        if any(r["id"] == run_id for r in runs):
            break
        time.sleep(0.3)
    run = next(r for r in runs if r["id"] == run_id)
    assert (run["files_seen"], run["files_taken"], run["error"]) == (2, 2, None)
    batch = json.loads(cli(server, "batches", "show", run["batch_id"], "--json").stdout)
    assert batch["document_count"] == 2
    shown = cli(server, "sources", "show", source_id, *project).stdout
    assert source_id in shown and "drop" in shown
    missing = cli(server, "sources", "show", "src_missing", *project, code=1)
    assert "not_found" in missing.stderr
    bad = cli(
        server,
        "sources",
        "create",
        "/etc",
        *project,
        "--workflow",
        server.workflow_id,
        "--cron",
        "* * * * *",
        code=1,
    )
    assert "path" in bad.stderr
