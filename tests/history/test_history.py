"""Execution history over real DBOS executions, through HTTP: every step of the batch's flow and
of each document's, with times, durations, attempts (retried attempts recorded from DBOS's
retry log) and outcomes; tenant-scoped (another tenant's id is 404, like a missing one)."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from typer.testing import CliRunner

from docflow.cli import app as cli_app
from docflow.history.attempts import recording_attempts
from docflow.history.repository import StepAttemptRepository
from support.api_fixtures import ok
from support.dbos_fixtures import (  # noqa: F401
    Setup,
    create_batch,
    dbos_env,
    invoice_pdf,
    setup,
    submit,
    wait_terminal,
)

PDF = "application/pdf"
DOCUMENT_STEPS = ["document.extract", "document.persist"]
_calls: dict[str, int] = {}


@DBOS.step(name="test.flaky", retries_allowed=True, max_attempts=4, interval_seconds=0.01)
def flaky_step(key: str) -> str:
    _calls[key] = _calls.get(key, 0) + 1
    if _calls[key] < 3:
        raise ConnectionError(f"transient failure {_calls[key]}")
    return "ok"


@DBOS.step(name="test.broken")
def broken_step() -> None:
    raise ValueError("corrupt input")


@DBOS.workflow(name="test.history_flow")
def history_flow(key: str) -> str:
    flaky_step(key)
    with contextlib.suppress(ValueError):
        broken_step()
    return "done"


def _get(ctx: Setup, url: str, status: int = 200) -> dict[str, Any]:
    return ok(ctx.env.client.get(url, headers=ctx.tenant.headers), status)


def _check_step_times(step: dict[str, Any]) -> None:
    started = datetime.fromisoformat(step["started_at"])
    completed = datetime.fromisoformat(step["completed_at"])
    assert started <= completed
    # Times are rendered from epoch milliseconds through floats: within a millisecond.
    assert abs(step["duration_ms"] - (completed - started).total_seconds() * 1000) <= 1


def test_batch_history_lists_every_step(setup: Setup) -> None:  # noqa: F811
    files = [(f"h-{i}.pdf", PDF, invoice_pdf(f"INV-{i}", "12.00")) for i in range(2)]
    batch = submit(setup, files)
    wait_terminal(setup, batch["id"])
    # The batch's row is terminal once `batch.complete` commits, a moment before DBOS records
    # the completion's own end: wait for that too.
    DBOS.retrieve_workflow(f"complete:{batch['id']}").get_result()
    history = _get(setup, f"/v1/batches/{batch['id']}/history")
    assert history["batch_id"] == batch["id"] and history["status"] == "SUCCEEDED"
    execution, completion = history["execution"], history["completion"]
    assert execution["execution_id"] == batch["id"] and execution["status"] == "SUCCESS"
    assert [s["name"] for s in execution["steps"]] == ["batch.begin"]
    assert completion["execution_id"] == f"complete:{batch['id']}"
    assert completion["status"] == "SUCCESS"
    assert [s["name"] for s in completion["steps"]] == ["batch.complete"]
    executions = {d["execution"]["execution_id"] for d in history["documents"]}
    assert executions == {f"doc:{d['id']}" for d in batch["documents"]}
    assert len(history["documents"]) == 2
    for document in history["documents"]:
        steps = document["execution"]["steps"]
        assert [s["name"] for s in steps] == DOCUMENT_STEPS
        assert {(s["outcome"], s["attempt"], s["error"]) for s in steps} == {("succeeded", 1, None)}
        for step in steps:
            _check_step_times(step)
        assert document["execution"]["executor_id"] == "test-executor"
        assert document["status"] == "SUCCEEDED"


def test_document_history_counts_retried_attempts_and_errors(
    setup: Setup,  # noqa: F811
) -> None:
    pdf = invoice_pdf("INV-7", "1.00")
    batch = create_batch(setup, [("later.pdf", PDF, len(pdf))])
    document_id = batch["documents"][0]["id"]
    url = f"/v1/documents/{document_id}/history"
    before = _get(setup, url)
    assert before["execution"] is None and before["status"] == "PENDING_UPLOAD"
    with recording_attempts(setup.env.session_factory), SetWorkflowID(f"doc:{document_id}"):
        assert DBOS.start_workflow(history_flow, document_id).get_result() == "done"
    steps = _get(setup, url)["execution"]["steps"]
    assert [(s["name"], s["attempt"], s["outcome"]) for s in steps] == [
        ("test.flaky", 3, "succeeded"),
        ("test.broken", 1, "failed"),
    ]
    assert steps[1]["error"] == "ValueError: corrupt input"
    assert [s["retried_errors"] for s in steps] == [["ConnectionError", "ConnectionError"], []]
    with setup.env.session_factory() as session:
        recorded = StepAttemptRepository(session).of_executions([f"doc:{document_id}"])
    # Readable across tenants (no tenant column): the error's type, never its message.
    assert [a.error for a in recorded] == ["ConnectionError", "ConnectionError"]


@pytest.mark.parametrize("kind", ["batches", "documents"])
def test_another_tenants_history_is_404(setup: Setup, kind: str) -> None:  # noqa: F811
    batch = create_batch(setup, [("x.pdf", PDF, 10)])
    target = batch["id"] if kind == "batches" else batch["documents"][0]["id"]
    stranger = setup.env.tenant()
    foreign = setup.env.client.get(f"/v1/{kind}/{target}/history", headers=stranger.headers)
    assert foreign.status_code == 404
    assert _get(setup, f"/v1/{kind}/{target}/history")["execution"] is None
    if kind == "batches":
        assert _get(setup, f"/v1/{kind}/{target}/history")["completion"] is None


def test_docflow_inspect_batch_prints_every_step(
    setup: Setup,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch = submit(setup, [("inspected.pdf", PDF, invoice_pdf("INV-42", "42.00"))])
    wait_terminal(setup, batch["id"])
    settings = setup.env.settings
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", settings.resolved_database_url())
    tenant = setup.tenant.tenant_id
    monkeypatch.setenv("COLUMNS", "80")  # a narrow terminal cut the table's id to "bat_01m9…"
    narrow = CliRunner().invoke(cli_app, ["inspect", "batch", batch["id"], "--tenant", tenant])
    assert narrow.output.count(batch["id"]) == 2  # the summary's and the table's, both whole
    monkeypatch.setenv("COLUMNS", "250")
    result = CliRunner().invoke(cli_app, ["inspect", "batch", batch["id"], "--tenant", tenant])
    assert result.exit_code == 0, result.output
    assert f"batch {batch['id']}: SUCCEEDED; execution SUCCESS on test-executor" in result.output
    for name in ("batch.begin", "batch.complete", *DOCUMENT_STEPS, "inspected.pdf"):
        assert name in result.output
    stranger = setup.env.tenant().tenant_id
    refused = CliRunner().invoke(cli_app, ["inspect", "batch", batch["id"], "--tenant", stranger])
    assert refused.exit_code == 1 and "batch not found" in refused.output


def test_docflow_inspect_document_prints_steps_attempts_and_errors(
    setup: Setup,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch = create_batch(setup, [("inspected.pdf", PDF, 10)])
    document_id = batch["documents"][0]["id"]
    settings = setup.env.settings
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("COLUMNS", "250")
    tenant = setup.tenant.tenant_id
    inspect = ["inspect", "document", document_id, "--tenant", tenant]
    before = CliRunner().invoke(cli_app, inspect)
    assert before.exit_code == 0, before.output
    assert f"document {document_id} (inspected.pdf) of batch {batch['id']}: PENDING_UPLOAD, " in (
        before.output
    )
    assert "not started" in before.output

    with recording_attempts(setup.env.session_factory), SetWorkflowID(f"doc:{document_id}"):
        assert DBOS.start_workflow(history_flow, document_id).get_result() == "done"
    result = CliRunner().invoke(cli_app, inspect)
    assert result.exit_code == 0, result.output
    assert "execution SUCCESS on test-executor, started 1 time(s)" in result.output
    flaky = next(line for line in result.output.splitlines() if "test.flaky" in line)
    assert "retried: ConnectionError, ConnectionError" in flaky and " 3 " in flaky
    broken = next(line for line in result.output.splitlines() if "test.broken" in line)
    assert "failed" in broken and "ValueError: corrupt input" in broken

    as_json = CliRunner().invoke(cli_app, [*inspect, "--json"])
    assert as_json.exit_code == 0, as_json.output
    answer = json.loads(as_json.stdout)
    assert answer == _get(setup, f"/v1/documents/{document_id}/history")
    stranger = setup.env.tenant().tenant_id
    refused = CliRunner().invoke(
        cli_app, ["inspect", "document", document_id, "--tenant", stranger]
    )
    assert refused.exit_code == 1 and "document not found (not_found)" in refused.output
