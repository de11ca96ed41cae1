"""`docflow dead-letters list` as JSON (the API's items) and CSV, against the test database."""

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
from docflow.events import envelopes, service
from docflow.events.envelopes import Envelope
from docflow.kit import ids
from docflow.kit.clock import utcnow
from support.api_fixtures import make_api_tenant, ok

runner = CliRunner()


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")


def _stdout(*args: str) -> str:
    result = runner.invoke(app, ["dead-letters", "list", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.usefixtures("cli_env")
def test_dead_letters_list_prints_the_apis_json_and_csv(
    client: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = make_api_tenant(session_factory, "Dead letters CLI")
    raw = Envelope(
        id=ids.new_id("evt"),
        source=envelopes.source_for(tenant.tenant_id),
        type=envelopes.WORKFLOW_PUBLISHED,
        time=utcnow(),
        subject="workflows/wfl_x",
        data={"tenant_id": tenant.tenant_id},
    ).to_dict()
    with session_factory.begin() as session:
        for target in ("whe_a", "whe_b"):
            service.add_dead_letter(
                session,
                consumer_name="webhooks",
                raw=raw,
                error='HTTP 503, then "gone"',
                category="http_5xx",
                attempts=5,
                workflow_id=f"job-{target}-{tenant.tenant_id}",
                target=target,
            )
    answer = ok(client.get("/v1/dead-letters", headers=tenant.headers), 200)["items"]
    assert len(answer) == 2
    t = ("--tenant", tenant.tenant_id)
    assert json.loads(_stdout(*t, "--json")) == answer
    assert json.loads(_stdout(*t, "--output", "json", "--target", "whe_b")) == [
        letter for letter in answer if letter["target"] == "whe_b"
    ]
    rows = list(csv.reader(io.StringIO(_stdout(*t, "-o", "csv"))))
    assert rows[0] == [
        "id",
        "consumer",
        "target",
        "event",
        "type",
        "category",
        "attempts",
        "created",
        "redriven",
    ]
    assert [row[0] for row in rows[1:]] == [letter["id"] for letter in answer]
    assert {(row[2], row[6]) for row in rows[1:]} == {("whe_a", "5"), ("whe_b", "5")}
    table = _stdout(*t)
    assert all(letter["id"] in table for letter in answer) and "http_5xx" in table
