"""The `docflow` command line against the test database (and a fresh SQLite one for migrate)."""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from docflow import cli
from docflow.cli import app
from docflow.tenants import passwords
from support.api_fixtures import ok

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

runner = CliRunner()


def run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


def _one(pattern: str, text: str) -> str:
    """The one value matching `pattern` (log lines may repeat it)."""
    found = set(re.findall(pattern, text))
    assert len(found) == 1, text
    return str(found.pop())


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads its settings from the environment, like in production."""
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")


@pytest.mark.usefixtures("cli_env")
def test_tenant_keys_projects_and_workflows(client: TestClient, tmp_path: Path) -> None:
    out = run("tenants", "create", "Acme [CLI]", "--plan", "pro")
    tenant = _one(r"\bten_[0-9a-z]{26}\b", out)
    owner_key = _one(r"\bdfk_\S+", out)
    assert "Acme [CLI]" in out and "plan pro" in out
    owner = {"Authorization": f"Bearer {owner_key}"}
    assert ok(client.get("/v1/api-keys", headers=owner), 200)["items"][0]["scopes"] == ["*"]

    out = run("api-keys", "create", "--tenant", tenant, "--name", "ci", "--scope", "read")
    ci_key, ci_id = _one(r"\bdfk_\S+", out), _one(r"\bkey_[0-9a-z]{26}\b", out)
    ci = {"Authorization": f"Bearer {ci_key}"}
    assert client.get("/v1/projects", headers=ci).status_code == 200
    listed = run("api-keys", "list", "--tenant", tenant)
    assert ci_id in listed and "owner" in listed and "read" in listed
    assert ci_key not in listed
    assert f"revoked {ci_id}" in run("api-keys", "revoke", ci_id, "--tenant", tenant)
    assert client.get("/v1/projects", headers=ci).status_code == 401

    project = _one(
        r"\bprj_[0-9a-z]{26}\b", run("projects", "create", "Receipts", "--tenant", tenant)
    )
    assert project in run("projects", "list", "--tenant", tenant)

    for example in ("invoice.yaml", "receipt.yaml"):
        out = run(
            "workflows",
            "apply",
            "-f",
            str(EXAMPLES / example),
            "--project",
            project,
            "--tenant",
            tenant,
        )
        assert "version 1" in out

    path = tmp_path / "wf.yaml"
    path.write_text("name: slips\nfields:\n  - name: total\n    type: money\n", encoding="utf-8")
    apply = ("workflows", "apply", "-f", str(path), "--project", project, "--tenant", tenant)
    workflow = _one(r"\bwfl_[0-9a-z]{26}\b", run(*apply))
    assert "version 1" in run(*apply)  # unchanged: no new version
    path.write_text(path.read_text(encoding="utf-8") + "review_threshold: 0.9\n", encoding="utf-8")
    assert "version 2" in run(*apply)
    got = ok(client.get(f"/v1/workflows/{workflow}", headers=owner), 200)
    assert (got["version"], got["definition"]["review_threshold"]) == (2, 0.9)
    listed_workflows = ok(client.get(f"/v1/projects/{project}/workflows", headers=owner), 200)
    assert len(listed_workflows["items"]) == 3


@pytest.mark.usefixtures("cli_env")
def test_errors_are_reported_with_an_exit_code(tmp_path: Path) -> None:
    tenant = _one(r"\bten_[0-9a-z]{26}\b", run("tenants", "create", "Errors"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nfields:\n  - name: total\n    type: currency\n", encoding="utf-8")
    out = run(
        "workflows", "apply", "-f", str(bad), "--project", "prj_x", "--tenant", tenant, code=2
    )
    assert "fields.0.type" in out and "field 'total'" in out
    assert "(invalid_workflow_file, field fields.0.type)" in out
    good = EXAMPLES / "receipt.yaml"
    missing = "prj_00000000000000000000000000"
    out = run(
        "workflows", "apply", "-f", str(good), "--project", missing, "--tenant", tenant, code=1
    )
    assert "project not found" in out
    assert "not found" in run("api-keys", "revoke", "key_nope", "--tenant", tenant, code=1)
    assert "plan" in run("tenants", "create", "Bad plan", "--plan", "Not A Plan", code=1)
    ghost = "ten_00000000000000000000000000"
    assert "is ten_0" in run("projects", "create", "P", "--tenant", ghost, code=1)
    assert "tenant not found" in run("api-keys", "create", "--tenant", ghost, "--name", "k", code=1)


def test_migrate_creates_a_fresh_sqlite_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "fresh"))
    monkeypatch.delenv("DOCFLOW_DATABASE_URL", raising=False)
    assert "schema up to date" in run("migrate")
    assert "schema up to date" in run("migrate")  # again: nothing to do
    assert (tmp_path / "fresh" / "docflow.db").is_file()
    assert "ten_" in run("tenants", "create", "Fresh")
    assert "PostgreSQL" in run("migrate", "--create-app-role", code=2)


def test_operator_commands_on_a_database_never_migrated_say_to_migrate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("DOCFLOW_DATABASE_URL", raising=False)
    for args in (("tenants", "list"), ("usage", "llm", "--tenant", "ten_x")):
        result = runner.invoke(app, list(args))
        assert result.exit_code == 1, result.output
        assert "has no docflow tables: run `docflow migrate` first" in result.stderr
        assert "Traceback" not in result.output and result.stdout == ""
    unreachable = "postgresql+psycopg://docflow:secret@127.0.0.1:1/docflow"
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", unreachable)
    result = runner.invoke(app, ["tenants", "list"])
    assert result.exit_code == 1, result.output
    assert "cannot connect to the database" in result.stderr and "secret" not in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_answers_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "served"))
    monkeypatch.delenv("DOCFLOW_DATABASE_URL", raising=False)
    run("migrate")
    port = _free_port()
    command = [
        sys.executable,
        "-c",
        "from docflow.cli import app; app()",
        "serve",
        "--port",
        str(port),
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready = None
        for _ in range(100):
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert ready is not None and ready.status_code == 200, "the server did not come up"
        assert ready.json()["checks"] == {
            "database": "ok",
            "events": "ok",
            "workflows": "ok",
            "downstream": "ok",
        }
        unauthenticated = httpx.get(f"http://127.0.0.1:{port}/v1/projects", timeout=5)
        assert unauthenticated.status_code == 401
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.usefixtures("cli_env")
def test_users_and_their_keys(client: TestClient) -> None:
    out = run("tenants", "create", "Team")
    tenant, owner_key = _one(r"\bten_[0-9a-z]{26}\b", out), _one(r"\bdfk_\S+", out)
    owner = {"Authorization": f"Bearer {owner_key}"}
    email = f"lead-{tenant}@example.com"
    out = run("users", "create", email.upper(), "--tenant", tenant, "--role", "admin")
    lead = _one(r"\busr_[0-9a-z]{26}\b", out)
    assert email in out and "admin" in out
    out = run("users", "create", f"rev-{tenant}@example.com", "--tenant", tenant, "--name", "Rev")
    reviewer = _one(r"\busr_[0-9a-z]{26}\b", out)
    listed = run("users", "list", "--tenant", tenant)
    assert lead in listed and reviewer in listed and "Rev" in listed and "viewer" in listed
    # A member is named by id or by email (any case); another tenant's user is not found.
    rev_email = f"REV-{tenant}@example.com"
    assert f"user {reviewer} is reviewer" in run(
        "users", "role", rev_email, "reviewer", "--tenant", tenant
    )
    shown = run("users", "show", rev_email, "--tenant", tenant, "--json")
    assert (json.loads(shown)["id"], json.loads(shown)["role"]) == (reviewer, "reviewer")
    elsewhere = _one(r"\bten_[0-9a-z]{26}\b", run("tenants", "create", "Elsewhere"))
    assert "user not found" in run("users", "show", rev_email, "--tenant", elsewhere, code=1)
    assert "user not found" in run(
        "users", "role", rev_email, "admin", "--tenant", elsewhere, code=1
    )

    # A key of the reviewer: by default what the role grants, and attributed to them.
    out = run("api-keys", "create", "--tenant", tenant, "--name", "rev", "--user", reviewer)
    key_id, token = _one(r"\bkey_[0-9a-z]{26}\b", out), _one(r"\bdfk_\S+", out)
    keys = {k["id"]: k for k in ok(client.get("/v1/api-keys", headers=owner), 200)["items"]}
    assert (keys[key_id]["user_id"], keys[key_id]["scopes"]) == (reviewer, ["read", "review"])
    assert reviewer in run("api-keys", "list", "--tenant", tenant)
    personal = {"Authorization": f"Bearer {token}"}
    assert client.get("/v1/projects", headers=personal).status_code == 200

    # Refused: scopes beyond the role, the last admin, unknown users and roles.
    beyond = ("api-keys", "create", "--tenant", tenant, "--name", "x", "--user", reviewer)
    assert "not write" in run(*beyond, "--scope", "write", code=1)
    assert "at least one admin" in run("users", "role", lead, "viewer", "--tenant", tenant, code=1)
    assert "at least one admin" in run("users", "remove", lead, "--tenant", tenant, code=1)
    assert "role must be one of" in run(
        "users", "role", reviewer, "boss", "--tenant", tenant, code=1
    )
    nobody = "usr_00000000000000000000000000"
    assert "user not found" in run("users", "remove", nobody, "--tenant", tenant, code=1)
    assert "already a member" in run("users", "create", email, "--tenant", tenant, code=1)
    assert "valid email" in run("users", "create", "nope", "--tenant", tenant, code=1)

    out = run("users", "remove", reviewer, "--tenant", tenant)
    assert f"removed {reviewer}; revoked 1 API key(s)" in out
    assert client.get("/v1/projects", headers=personal).status_code == 401
    assert reviewer not in run("users", "list", "--tenant", tenant)


@pytest.mark.usefixtures("cli_env")
def test_users_get_console_passwords(session_factory: sessionmaker[Session]) -> None:
    tenant = _one(r"\bten_[0-9a-z]{26}\b", run("tenants", "create", "Console"))
    email = f"pat-{tenant}@example.com"
    made = runner.invoke(
        app,
        ["users", "create", email, "--tenant", tenant, "--password-stdin"],
        input="first password\n",
    )
    assert made.exit_code == 0, made.output
    user = _one(r"\busr_[0-9a-z]{26}\b", made.output)
    with session_factory() as session:
        assert passwords.sign_in(session, email=email, password="first password") == user
    changed = runner.invoke(
        app, ["users", "set-password", email, "--tenant", tenant], input="second password\n"
    )
    assert changed.exit_code == 0 and f"user {user} has a new console password" in changed.output
    by_id = runner.invoke(app, ["users", "set-password", user, "--tenant", tenant], input="tiny\n")
    assert by_id.exit_code == 1 and "8 to 256 characters" in by_id.output
    with session_factory() as session:
        assert passwords.sign_in(session, email=email, password="second password") == user
    other = _one(r"\bten_[0-9a-z]{26}\b", run("tenants", "create", "Elsewhere"))
    foreign = runner.invoke(
        app, ["users", "set-password", user, "--tenant", other], input="third password\n"
    )
    assert foreign.exit_code == 1 and "user not found" in foreign.output


def _stdout(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.usefixtures("cli_env")
def test_operator_lists_print_the_apis_json_and_csv(client: TestClient) -> None:
    out = run("tenants", "create", "Formats")
    tenant, owner_key = _one(r"\bten_[0-9a-z]{26}\b", out), _one(r"\bdfk_\S+", out)
    owner = {"Authorization": f"Bearer {owner_key}"}
    run("projects", "create", "Receipts, 2026", "--tenant", tenant)
    run("users", "create", f"csv-{tenant}@example.com", "--tenant", tenant, "--name", 'A "B"')
    run("api-keys", "create", "--tenant", tenant, "--name", "ci", "--scope", "read")

    for command, path in (("api-keys", "/v1/api-keys"), ("projects", "/v1/projects")):
        answer = ok(client.get(path, headers=owner), 200)["items"]
        assert json.loads(_stdout(command, "list", "--tenant", tenant, "--json")) == answer
        assert json.loads(_stdout(command, "list", "--tenant", tenant, "-o", "json")) == answer
    users = ok(client.get("/v1/users", headers=owner), 200)["items"]
    assert json.loads(_stdout("users", "list", "--tenant", tenant, "--output", "json")) == users

    keys = list(
        csv.reader(io.StringIO(_stdout("api-keys", "list", "--tenant", tenant, "-o", "csv")))
    )
    assert keys[0] == ["id", "name", "prefix", "scopes", "user", "created", "expires", "revoked"]
    assert sorted(row[1] for row in keys[1:]) == ["ci", "owner"]
    projects = list(
        csv.reader(io.StringIO(_stdout("projects", "list", "--tenant", tenant, "-o", "csv")))
    )
    assert projects[0] == ["id", "name", "description", "created"]
    assert [row[1] for row in projects[1:]] == ["Receipts, 2026"]
    members = list(
        csv.reader(io.StringIO(_stdout("users", "list", "--tenant", tenant, "-o", "csv")))
    )
    assert members[0] == ["id", "email", "name", "role"]
    assert [f"csv-{tenant}@example.com", 'A "B"', "viewer"] in [row[1:] for row in members[1:]]
    assert "not one of" in run("projects", "list", "--tenant", tenant, "-o", "xml", code=2)


@pytest.mark.usefixtures("cli_env")
def test_keys_list_prints_json_and_whole_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = _one(r"\bten_[0-9a-z]{26}\b", run("tenants", "create", "Keys"))
    run("keys", "rotate", "--tenant", tenant)
    (version,) = json.loads(_stdout("keys", "list", "--tenant", tenant, "--json"))["items"]
    assert version["tenant_id"] == tenant and version["state"] == "active"
    assert set(version) == {"tenant_id", "version", "state", "kek_id", "created_at", "rewrapped_at"}
    monkeypatch.setenv("COLUMNS", "60")
    assert tenant in run("keys", "list", "--tenant", tenant)


def test_the_roots_help_lists_each_command_as_its_own_help_says() -> None:
    """`docflow --help` lists the commands without loading them: each summary must be the first
    paragraph of the command's own help, or the two drift apart."""
    listed = run("--help")
    for name, entry in cli.ROOT.items():
        command = cli.load(name)
        first = (command.help or "").strip().split("\n\n")[0]
        assert " ".join(first.split()) == entry.summary, name
        assert name in listed


HEAVY = ("sqlalchemy", "fastapi", "dbos", "uvicorn", "docflow.main", "docflow.db")


def _modules_after(*args: str) -> set[str]:
    code = (
        "import sys\nfrom docflow.cli import app\ntry:\n    app(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"')))


def test_help_and_remote_commands_load_no_service_database_or_runtime() -> None:
    # Each command loaded every module of the service first: about 5 s of CPU per command.
    assert _modules_after("--help") == set()
    assert _modules_after("batches", "submit", "--help") == set()
    unreachable = ("--url", "http://127.0.0.1:9", "--api-key", "dfk_x")
    assert _modules_after("documents", "show", "doc_x", *unreachable) == set()
    assert _modules_after("workflows", "list", "--project", "prj_x", *unreachable) == set()
    assert "sqlalchemy" in _modules_after("batches", "rerun", "--help")  # operator commands do
