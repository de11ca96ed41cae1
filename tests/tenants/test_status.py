"""A tenant's status through the real CLI (`docflow tenants list|show|suspend|resume`) and the
API: a suspended tenant's keys answer 403 `tenant_suspended` as problem+json, its upload URLs
refuse files, another tenant is untouched, and resuming brings everything back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from docflow.cli import app
from docflow.http.problems import PROBLEM_MEDIA_TYPE
from support.api_fixtures import ApiTenant, ok, post_batch, post_project, post_workflow
from support.dbos_fixtures import upload_path

runner = CliRunner()


def run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")


def _created(name: str) -> ApiTenant:
    out = run("tenants", "create", name)
    tenant = re.findall(r"\bten_[0-9a-z]{26}\b", out)[0]
    key = re.findall(r"\bkey_[0-9a-z]{26}\b", out)[0]
    return ApiTenant(tenant_id=tenant, key_id=key, token=re.findall(r"\bdfk_\S+", out)[0])


def _shown(tenant_id: str) -> dict[str, object]:
    shown: dict[str, object] = json.loads(run("tenants", "show", tenant_id, "--json"))
    return shown


@pytest.mark.usefixtures("cli_env")
def test_a_suspended_tenant_is_refused_until_it_is_resumed(
    client: TestClient, tenant_key_b: ApiTenant
) -> None:
    tenant = _created("Suspended Co")
    project = post_project(client, tenant)
    workflow = post_workflow(client, tenant, project["id"])
    waiting = post_batch(client, tenant, project["id"], workflow["id"], documents=1)
    upload = upload_path(waiting["documents"][0]["upload_url"])

    listed = json.loads(run("tenants", "list", "--json"))
    assert {"id": tenant.tenant_id, "status": "active"}.items() <= next(
        t for t in listed if t["id"] == tenant.tenant_id
    ).items()
    assert tenant.tenant_id in run("tenants", "list")

    out = run("tenants", "suspend", tenant.tenant_id, "--reason", "unpaid invoice", "--by", "ops")
    assert f"tenant {tenant.tenant_id} is suspended" in out and "by ops" in out
    shown = _shown(tenant.tenant_id)
    assert (shown["status"], shown["suspended_by"], shown["suspend_reason"]) == (
        "suspended",
        "ops",
        "unpaid invoice",
    )
    assert shown["active_api_keys"] == 1 and shown["suspended_at"]
    suspended = run("tenants", "list", "--status", "suspended", "--output", "csv")
    assert tenant.tenant_id in suspended
    assert tenant.tenant_id not in run("tenants", "list", "--status", "active", "--output", "csv")

    # Every call of the tenant's keys, reads included, and the files sent to its upload URLs.
    for response in (
        client.get("/v1/batches", headers=tenant.headers),
        client.post(
            "/v1/batches",
            headers=tenant.headers,
            json={"project_id": project["id"], "workflow_id": workflow["id"], "documents": []},
        ),
        client.put(upload, content=b"%PDF-1.4 suspended"),
    ):
        assert response.status_code == 403, response.text
        assert response.headers["content-type"].startswith(PROBLEM_MEDIA_TYPE)
        assert response.json()["code"] == "tenant_suspended"
    # Another tenant works as before.
    ok(client.get("/v1/batches", headers=tenant_key_b.headers), 200)

    # Suspending again keeps the first suspension.
    run("tenants", "suspend", tenant.tenant_id, "--reason", "again", "--by", "someone")
    assert _shown(tenant.tenant_id)["suspend_reason"] == "unpaid invoice"

    assert f"tenant {tenant.tenant_id} is active" in run("tenants", "resume", tenant.tenant_id)
    shown = _shown(tenant.tenant_id)
    assert (shown["status"], shown["suspended_by"], shown["suspend_reason"]) == (
        "active",
        None,
        None,
    )
    ok(client.get("/v1/batches", headers=tenant.headers), 200)
    landed = ok(client.put(upload, content=b"%PDF-1.4 resumed"), 200)
    assert landed["status"] == "UPLOADED"


@pytest.mark.usefixtures("cli_env")
def test_status_commands_name_what_is_wrong() -> None:
    tenant = _created("Status errors")
    ghost = "ten_00000000000000000000000000"
    assert "tenant not found" in run("tenants", "suspend", ghost, "--reason", "x", code=1)
    assert "tenant not found" in run("tenants", "show", ghost, code=1)
    assert "tenant not found" in run("tenants", "resume", ghost, code=1)
    out = run("tenants", "suspend", tenant.tenant_id, "--reason", "  ", code=1)
    assert "field reason" in out
    assert "field status" in run("tenants", "list", "--status", "paused", code=1)
    assert _shown(tenant.tenant_id)["status"] == "active"
