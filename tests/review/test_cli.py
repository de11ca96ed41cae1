"""`docflow review ...` against the test database, as the operator acting for a tenant."""

from __future__ import annotations

import csv
import io
import json
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


def _stdout(*args: str) -> str:
    result = runner.invoke(app, ["review", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.usefixtures("cli_env")
def test_list_and_show_print_the_apis_json_and_csv(
    client: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = make_api_tenant(session_factory, "Review CLI formats")
    with session_factory.begin() as session:
        context = TenantContext(tenant_id=from_credential(tenant.tenant_id))
        batch = reviewable_batch(session, context, review=2)
        first, second = (d.id for d in batch.documents)
    t = ("--tenant", tenant.tenant_id)
    waiting = ok(
        client.get("/v1/documents", params={"status": "REVIEW_REQUIRED"}, headers=tenant.headers),
        200,
    )["items"]
    assert json.loads(_stdout("list", *t, "--json")) == waiting
    rows = list(csv.reader(io.StringIO(_stdout("list", *t, "-o", "csv"))))
    assert rows[0] == ["document", "name", "batch", "confidence", "why"]
    assert sorted(row[0] for row in rows[1:]) == sorted([first, second])
    assert all(row[2] == batch.id and "total: confidence 0.60" in row[4] for row in rows[1:])

    run("claim", second, *t, "--reviewer", "ann")
    run("approve", first, *t, "--reviewer", "ann", "--field", "total=12.50")
    shown = json.loads(_stdout("show", first, *t, "--output", "json"))
    document = ok(client.get(f"/v1/documents/{first}", headers=tenant.headers), 200)
    reviews = ok(client.get(f"/v1/documents/{first}/reviews", headers=tenant.headers), 200)
    assert shown["document"] == {k: v for k, v in document.items() if k != "result"}
    assert shown["fields"] == document["result"]["fields"]
    assert shown["reviews"] == reviews["items"] and len(shown["reviews"]) == 1
    assert shown["claim"] is None
    claimed = json.loads(_stdout("show", second, *t, "--json"))
    assert (claimed["claim"]["reviewer"], claimed["reviews"]) == ("ann", [])
    fields = list(csv.reader(io.StringIO(_stdout("show", first, *t, "-o", "csv"))))
    assert fields[0] == ["field", "value", "confidence", "read as"]
    assert ["total", "12.50"] in [row[:2] for row in fields[1:]]
    assert len(fields) - 1 == len(document["result"]["fields"])
