"""`docflow search reconcile|rebuild` on the configured database: counts per tenant, and a
command without a tenant refused."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from docflow import cli
from docflow.search.cli import app
from docflow.tenancy import TenantContext
from search.helpers import processed_batch, result
from support.api_fixtures import make_api_tenant

runner = CliRunner()


def run(*args: str, code: int = 0) -> str:
    answer = runner.invoke(app, list(args))
    assert answer.exit_code == code, answer.output
    return answer.output


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")


def test_the_commands_are_docflow_search() -> None:
    assert cli.ROOT["search"].target == "docflow.search.cli:app"
    assert set(cli.load("search").commands) == {"rebuild", "reconcile"}  # type: ignore[attr-defined]


@pytest.mark.usefixtures("cli_env")
def test_reconcile_then_rebuild_report_their_counts(session_factory: sessionmaker[Session]) -> None:
    made = make_api_tenant(session_factory, f"search cli {secrets.token_hex(3)}")
    tenant = TenantContext(tenant_id=made.tenant_id, scopes=("*",))
    with session_factory() as session, session.begin():
        processed_batch(session, tenant, [result("1.00", "2026-01-01")] * 2, project="cli")
    first = run("reconcile", "--tenant", made.tenant_id)
    # tenant, documents, missing, stale, orphaned, written
    assert f"{made.tenant_id} │ 2         │ 2       │ 0     │ 0        │ 2" in first, first
    again = run("reconcile", "--tenant", made.tenant_id)
    assert f"{made.tenant_id} │ 2         │ 0       │ 0     │ 0        │ 0" in again, again
    rebuilt = run("rebuild", "--tenant", made.tenant_id)
    assert f"{made.tenant_id} │ 2         │ 0       │ 0     │ 0        │ 2" in rebuilt, rebuilt
    assert "give --tenant TEN or --all" in run("reconcile", code=1)
