"""`docflow review ...` against the test database, as the operator acting for a tenant."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from docflow.cli import app
from docflow.tenancy import TenantContext, from_credential
from support.api_fixtures import make_api_tenant, ok
from support.review_fixtures import reviewable_batch

runner = CliRunner()


def run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["review", *args])
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")


@pytest.mark.usefixtures("cli_env")
def test_list_next_show_approve_and_reject(
    client: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = make_api_tenant(session_factory, "Review CLI")
    with session_factory.begin() as session:
        context = TenantContext(tenant_id=from_credential(tenant.tenant_id))
        batch = reviewable_batch(session, context, review=2)
        first, second = (d.id for d in batch.documents)
    t = ("--tenant", tenant.tenant_id)
    listed = run("list", *t)
    assert first in listed and second in listed and "total: confidence 0.60" in listed
    shown = run("next", *t, "--reviewer", "ann")
    assert f"{first} d0.pdf: REVIEW_REQUIRED" in shown and "claimed by ann" in shown
    assert "12.5O" in shown  # what was read
    taken = run("approve", first, *t, "--reviewer", "bob", "--field", "total=1", code=1)
    assert "another reviewer holds this document" in taken
    bad = run("approve", first, *t, "--reviewer", "ann", "--field", "total=lots", code=1)
    assert "fields.total" in bad
    out = run("approve", first, *t, "--reviewer", "ann", "--field", "total=12.50")
    assert "approved: SUCCEEDED (total=12.50)" in out
    out = run("reject", second, *t, "--reviewer", "bob", "--reason", "a menu")
    assert "rejected: FAILED" in out
    trail = run("show", first, *t)
    assert "SUCCEEDED (reviewed)" in trail and "ann approve total: None -> '12.50'" in trail
    assert run("list", *t).count("doc_") == 0
    document = ok(client.get(f"/v1/documents/{first}", headers=tenant.headers), 200)
    assert document["result"]["fields"]["total"]["value"] == "12.50"
    assert "name=value" in run("approve", second, *t, "--field", "total", code=2)
