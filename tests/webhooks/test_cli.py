"""`docflow webhooks`: create (secret shown once), list, update, disable, enable, delete under a
tenant, and `verify` accepting a good webhook and refusing a tampered body, a stale timestamp
and a wrong secret."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from docflow import cli
from docflow.events.envelopes import BATCH_COMPLETED, DOCUMENT_COMPLETED
from docflow.projects import service as projects_service
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants_service
from docflow.webhooks import signing
from docflow.webhooks.cli import app
from support.api_fixtures import ApiTenant, ok, post_project

runner = CliRunner()


def test_the_commands_are_docflow_webhooks() -> None:
    assert cli.ROOT["webhooks"].target == "docflow.webhooks.cli:app"
    assert cli.load("webhooks").name == "webhooks"


def run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")


@pytest.mark.usefixtures("cli_env")
def test_create_list_delete(session_factory: sessionmaker[Session]) -> None:
    with session_factory() as session:
        tenant = tenants_service.create_tenant(session, name="Webhooks CLI").id
        context = TenantContext(tenant_id=tenant)
        project = projects_service.create_project(session, context, name="Hooks").id
        session.commit()
    scope = ("--tenant", tenant, "--project", project)
    out = run("create", "https://93.184.215.14/in", *scope, "--event-type", BATCH_COMPLETED)
    endpoint = re.findall(r"\bwhe_[0-9a-z]{26}\b", out)[0]
    assert re.search(r"secret whsec_[A-Za-z0-9+/=]{44}", out)
    listed = run("list", *scope)
    assert endpoint in listed and BATCH_COMPLETED in listed and "whsec_" not in listed
    refused = run("create", "http://127.0.0.1/in", *scope, code=1)
    assert "private, loopback" in refused
    unknown = run("create", "https://93.184.215.14/in", *scope, "--event-type", "x.y.v1", code=1)
    assert "unknown event type 'x.y.v1'" in unknown
    run("delete", endpoint, "--tenant", tenant)
    assert endpoint not in run("list", *scope)
    assert "not found" in run("delete", endpoint, "--tenant", tenant, code=1)


@pytest.mark.usefixtures("cli_env")
def test_update_disable_and_enable(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project = post_project(client, tenant_key_a, "Hooks to change")["id"]
    tenant = tenant_key_a.tenant_id
    out = run("create", "https://93.184.215.14/in", "--tenant", tenant, "--project", project)
    endpoint = re.findall(r"\bwhe_[0-9a-z]{26}\b", out)[0]
    by_api = f"/v1/webhooks/{endpoint}"

    def read() -> dict[str, object]:
        return ok(client.get(by_api, headers=tenant_key_a.headers), 200)

    change = ("update", endpoint, "--tenant", tenant)
    out = run(*change, "--url", "https://93.184.215.15/hooks", "--event-type", BATCH_COMPLETED)
    assert f"endpoint {endpoint}: https://93.184.215.15/hooks; {BATCH_COMPLETED}; enabled" in out
    run(*change, "--event-type", DOCUMENT_COMPLETED, "--event-type", BATCH_COMPLETED)
    run(*change, "--description", "the ERP")
    got = read()
    assert (got["url"], got["event_types"], got["description"]) == (
        "https://93.184.215.15/hooks",
        [DOCUMENT_COMPLETED, BATCH_COMPLETED],
        "the ERP",
    )
    assert "(all)" in run(*change, "--all-event-types")
    assert read()["event_types"] == []

    assert "disabled (disabled by the tenant)" in run("disable", endpoint, "--tenant", tenant)
    assert (read()["enabled"], read()["disabled_reason"]) == (False, "disabled by the tenant")
    assert "enabled" in run("enable", endpoint, "--tenant", tenant)
    assert (read()["enabled"], read()["disabled_reason"]) == (True, None)

    # Refused as the API refuses them, naming the field; nothing to change is a usage error.
    assert "(invalid_input, field url)" in run(*change, "--url", "http://127.0.0.1/in", code=1)
    unknown = run(*change, "--event-type", "x.y.v1", code=1)
    assert "unknown event type 'x.y.v1'" in unknown and "field event_types" in unknown
    assert "at least one of" in run(*change, code=2)
    assert "not both" in run(*change, "--all-event-types", "--event-type", BATCH_COMPLETED, code=2)
    stranger = "ten_00000000000000000000000000"
    gone = run("enable", endpoint, "--tenant", stranger, code=1)
    assert "not found" in gone
    assert read()["url"] == "https://93.184.215.15/hooks"


def _received(tmp_path: Path, timestamp: int) -> tuple[str, list[str], Path]:
    secret = signing.new_secret()
    body = b'{"id":"evt_1","type":"docflow.batch.completed.v1"}'
    headers = signing.sign(secret, "evt_1", timestamp, body).as_dict()
    body_file = tmp_path / "body.json"
    body_file.write_bytes(body)
    args = [arg for name, value in headers.items() for arg in ("--header", f"{name}: {value}")]
    return secret, args, body_file


def test_verify_accepts_a_good_webhook(tmp_path: Path) -> None:
    secret, headers, body_file = _received(tmp_path, int(time.time()))
    out = run("verify", "--secret", secret, *headers, "--body-file", str(body_file))
    assert "valid webhook evt_1" in out


def test_verify_refuses_a_tampered_body_a_stale_timestamp_and_another_secret(
    tmp_path: Path,
) -> None:
    secret, headers, body_file = _received(tmp_path, int(time.time()))
    body_file.write_bytes(body_file.read_bytes().replace(b"batch", b"batsh"))
    args = ["verify", *headers, "--body-file", str(body_file)]
    assert "no webhook-signature matches" in run(*args, "--secret", secret, code=1)

    secret, headers, body_file = _received(tmp_path, int(time.time()) - 600)
    args = ["verify", *headers, "--body-file", str(body_file)]
    assert "outside the tolerance" in run(*args, "--secret", secret, code=1)
    assert "valid webhook" in run(*args, "--secret", secret, "--tolerance", "900")
    assert "no webhook-signature" in run(
        *args, "--secret", signing.new_secret(), "--tolerance", "900", code=1
    )
    assert "name: value" in run(
        *args[:-2], "--body-file", str(body_file), "--header", "x", "--secret", secret, code=1
    )


@pytest.mark.usefixtures("cli_env")
def test_list_prints_the_apis_json_and_csv(client: TestClient, tenant_key_a: ApiTenant) -> None:
    project = post_project(client, tenant_key_a, "Hooks as JSON")["id"]
    scope = ("--tenant", tenant_key_a.tenant_id, "--project", project)
    run("create", "https://93.184.215.14/in", *scope, "--event-type", BATCH_COMPLETED)
    run("create", "https://93.184.215.15/all", *scope)
    answer = ok(client.get(f"/v1/projects/{project}/webhooks", headers=tenant_key_a.headers), 200)
    assert len(answer["items"]) == 2

    def stdout(*args: str) -> str:
        result = runner.invoke(app, ["list", *scope, *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    assert json.loads(stdout("--json")) == answer["items"]
    assert json.loads(stdout("-o", "json")) == answer["items"]
    rows = list(csv.reader(io.StringIO(stdout("--output", "csv"))))
    assert rows[0] == ["id", "url", "event types", "enabled", "disabled reason"]
    assert sorted(row[1:4] for row in rows[1:]) == [
        ["https://93.184.215.14/in", BATCH_COMPLETED, "True"],
        ["https://93.184.215.15/all", "(all)", "True"],
    ]
