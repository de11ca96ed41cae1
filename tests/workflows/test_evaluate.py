"""Measuring workflow versions on reviewed documents, end to end: the real app, DBOS and engine,
generated text PDFs run through the pipeline, reviewed over HTTP (corrected, approved,
rejected), then candidates evaluated and published under `require_no_regression`."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas
from typer.testing import CliRunner

from docflow.cli import app as cli_app
from docflow.documents.repository import DocumentRepository
from docflow.workflows import evaluation
from support.api_fixtures import ok, workflow_body
from support.dbos_fixtures import (  # noqa: F401
    Setup,
    dbos_env,
    documents,
    setup,
    submit,
    wait_terminal,
)
from support.stored_workflows import LOOKBEHIND, store_version

PDF = "application/pdf"
# Every document goes to review (text-layer confidence is about 0.94).
STRICT = {"review_threshold": 0.999, "confidence_threshold": 0.1}


def _invoice(number: str, total: str, due: str) -> bytes:
    """A text PDF whose `Total` is before a discount and whose `Amount Due` is what is owed."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 12)
    pdf.drawString(50, A4[1] - 60, "Blue Harbour Trading Ltd")
    pdf.drawString(50, A4[1] - 120, f"Invoice No: {number}")
    pdf.drawString(50, A4[1] - 300, f"Total: {total}")
    pdf.drawString(50, A4[1] - 340, f"Amount Due: {due}")
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def _body(invoice_label: str = "Invoice No", total_label: str = "Total") -> dict[str, Any]:
    body = workflow_body("invoice", **STRICT)
    body["fields"][0]["locators"] = [{"kind": "label", "labels": [invoice_label]}]
    body["fields"][1]["locators"] = [{"kind": "label", "labels": [total_label]}]
    return body


def _put(s: Setup, body: dict[str, Any], **params: Any) -> Any:
    url = f"/v1/workflows/{s.workflow_id}"
    return s.env.client.put(url, json=body, params=params, headers=s.tenant.headers)


def _evaluate(s: Setup, body: dict[str, Any], workflow_id: str | None = None) -> Any:
    url = f"/v1/workflows/{workflow_id or s.workflow_id}/evaluate"
    return s.env.client.post(url, json=body, headers=s.tenant.headers)


def _review(s: Setup, document_id: str, body: dict[str, Any]) -> None:
    h = s.tenant.headers
    ok(s.env.client.post(f"/v1/documents/{document_id}/claim", headers=h), 200)
    ok(s.env.client.post(f"/v1/documents/{document_id}/review", json=body, headers=h), 200)


def _problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    return body


def _reviewed(s: Setup) -> dict[str, str]:
    """A batch of four invoices run through the pipeline (all in review), then reviewed: two
    with `total` corrected to the amount due, one approved as read, one rejected. Ids by name."""
    assert ok(_put(s, _body()), 200)["version"] == 2
    files = [
        ("a.pdf", PDF, _invoice("INV-0001", "10.00", "12.00")),
        ("b.pdf", PDF, _invoice("INV-0002", "20.00", "25.00")),
        ("c.pdf", PDF, _invoice("INV-0003", "30.00", "30.00")),
        ("d.pdf", PDF, _invoice("INV-0004", "40.00", "41.00")),
    ]
    batch = submit(s, files)
    wait_terminal(s, batch["id"])
    ids = {d["name"]: d["id"] for d in documents(s, batch["id"])}
    assert {d["status"] for d in documents(s, batch["id"])} == {"REVIEW_REQUIRED"}
    _review(s, ids["a.pdf"], {"fields": {"total": "12.00"}, "decision": "approve"})
    _review(s, ids["b.pdf"], {"fields": {"total": "25"}, "decision": "approve"})
    # A value sent as it was read confirms it.
    _review(s, ids["c.pdf"], {"fields": {"total": "30.00"}, "decision": "approve"})
    _review(s, ids["d.pdf"], {"decision": "reject", "reason": "a duplicate"})
    return ids


def _fields(answer: dict[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    return {
        f["field"]: (f["labelled"], f["corrected"], f["current_correct"], f["candidate_correct"])
        for f in answer["fields"]
    }


def test_a_candidate_is_measured_against_the_current_version_on_reviewed_documents(
    setup: Setup,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = _reviewed(setup)

    fixed = ok(_evaluate(setup, _body(total_label="Amount Due")), 200)
    assert (fixed["workflow_id"], fixed["current_version"]) == (setup.workflow_id, 2)
    # The rejected document is no example; the three approved ones are.
    assert (fixed["documents"], fixed["complete"], fixed["skipped"]) == (3, True, [])
    assert _fields(fixed) == {"invoice_number": (3, 0, 3, 3), "total": (3, 2, 1, 3)}
    total = next(f for f in fixed["fields"] if f["field"] == "total")
    assert (total["current_accuracy"], total["candidate_accuracy"]) == (0.3333, 1.0)
    assert total["delta"] == pytest.approx(0.6667)
    assert fixed["overall"] == {
        "labelled": 6,
        "current_correct": 4,
        "candidate_correct": 6,
        "current_accuracy": 0.6667,
        "candidate_accuracy": 1.0,
        "delta": 0.3333,
    }
    assert fixed["regressions"] == []
    assert fixed["changed_documents"] == 2
    changes = {c["document_id"]: c["fields"] for c in fixed["changes"]}
    assert changes[ids["b.pdf"]] == [
        {
            "field": "total",
            "expected": "25.00",
            "current": "20.00",
            "candidate": "25.00",
            "verdict": "fixed",
        }
    ]
    assert set(changes) == {ids["a.pdf"], ids["b.pdf"]}

    broken = ok(_evaluate(setup, _body(invoice_label="Order No")), 200)
    assert _fields(broken) == {"invoice_number": (3, 0, 3, 0), "total": (3, 2, 1, 1)}
    assert broken["regressions"] == ["invoice_number", "overall"]
    assert {f["verdict"] for c in broken["changes"] for f in c["fields"]} == {"broken"}

    # Nothing was published by measuring.
    url = f"/v1/workflows/{setup.workflow_id}"
    assert ok(setup.env.client.get(url, headers=setup.tenant.headers), 200)["version"] == 2

    refused = _problem(
        _put(setup, _body(invoice_label="Order No"), require_no_regression="true"),
        409,
        "accuracy_regression",
    )
    assert refused["fields"] == ["invoice_number", "overall"]
    assert ok(setup.env.client.get(url, headers=setup.tenant.headers), 200)["version"] == 2
    accepted = _put(setup, _body(total_label="Amount Due"), require_no_regression="true")
    assert ok(accepted, 200)["version"] == 3
    assert accepted.headers["Docflow-Evaluated-Documents"] == "3"
    # Without the flag nothing is measured, as before.
    plain = _put(setup, _body(invoice_label="Order No"))
    assert ok(plain, 200)["version"] == 4 and "Docflow-Evaluated-Documents" not in plain.headers

    # Against an earlier version: version 3 reads the amount due, so the old body loses.
    earlier = ok(_evaluate(setup, {**_body(), "against_version": 3}), 200)
    assert earlier["current_version"] == 3
    assert _fields(earlier) == {"invoice_number": (3, 0, 3, 3), "total": (3, 2, 3, 1)}
    assert earlier["regressions"] == ["total", "overall"]

    # Bounded: no document starts once the time budget is spent; one evaluation at a time.
    state = setup.env.client.app.state  # type: ignore[attr-defined]
    evaluator = state.evaluator
    state.evaluator = dataclasses.replace(evaluator, seconds=1e-9)
    try:
        cut = ok(_evaluate(setup, _body(total_label="Amount Due")), 200)
    finally:
        state.evaluator = evaluator
    assert (cut["documents"], cut["complete"], cut["fields"]) == (0, False, [])
    assert [s["reason"] for s in cut["skipped"]] == ["time_budget"] * 3
    monkeypatch.setattr(evaluation, "BUSY_WAIT_SECONDS", 0.1)
    with evaluator.slot():
        _problem(_evaluate(setup, _body()), 429, "evaluation_busy")
    assert ok(_evaluate(setup, _body()), 200)["documents"] == 3

    # The operator's command prints the same comparison.
    settings = setup.env.settings
    for name, value in {
        "DOCFLOW_ENV": "test",
        "DOCFLOW_HOME": str(settings.home),
        "DOCFLOW_DATABASE_URL": settings.database_url,
        "DOCFLOW_MIGRATION_DATABASE_URL": settings.migration_database_url,
        "DOCFLOW_STORAGE_URL": settings.storage_url,
        "COLUMNS": "200",
    }.items():
        monkeypatch.setenv(name, value)
    candidate = tmp_path / "candidate.yaml"
    candidate.write_text(json.dumps(_body(total_label="Amount Due")))  # JSON is YAML
    result = CliRunner().invoke(
        cli_app,
        [
            "workflows",
            "diff-eval",
            setup.workflow_id,
            "--tenant",
            setup.tenant.tenant_id,
            "--candidate",
            str(candidate),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    # Against version 4 (invoice numbers after "Order No", totals after "Total").
    assert printed["current_version"] == 4
    assert _fields(printed) == {"invoice_number": (3, 0, 0, 3), "total": (3, 2, 1, 3)}
    table = CliRunner().invoke(
        cli_app,
        [
            *("workflows", "diff-eval", setup.workflow_id, "--tenant", setup.tenant.tenant_id),
            *("--candidate", str(candidate), "--against", "2"),
        ],
    )
    assert table.exit_code == 0, table.output
    assert "3 reviewed documents" in table.stdout and "version 2" in table.stdout
    assert "fixed" in table.stdout and "+33.3%" in table.stdout
    # A candidate that loses accuracy fails the command (it exited 0), after printing why.
    worse = tmp_path / "worse.yaml"
    worse.write_text(json.dumps(_body(invoice_label="Order No", total_label="Nowhere")))
    regressed = CliRunner().invoke(
        cli_app,
        [
            *("workflows", "diff-eval", setup.workflow_id, "--tenant", setup.tenant.tenant_id),
            *("--candidate", str(worse), "--json"),
        ],
    )
    assert regressed.exit_code == 4, regressed.output
    assert json.loads(regressed.stdout)["regressions"] == ["total", "overall"]
    stranger = setup.env.tenant().tenant_id
    refused = CliRunner().invoke(
        cli_app,
        [
            "workflows",
            "diff-eval",
            setup.workflow_id,
            "--tenant",
            stranger,
            "--candidate",
            str(candidate),
        ],
    )
    assert refused.exit_code == 1 and "workflow not found" in refused.output

    # A reviewed document whose stored file is gone is left out, and said to be.
    with setup.env.session_factory() as session:
        document = DocumentRepository(session, setup.tenant.tenant_id).get(ids["a.pdf"])
        assert document is not None and document.storage_key is not None
        key = document.storage_key
    (Path(settings.storage_url.removeprefix("file://")) / key).unlink()
    gone = ok(_evaluate(setup, _body()), 200)
    assert gone["documents"] == 2 and gone["complete"] is True
    assert gone["skipped"] == [{"document_id": ids["a.pdf"], "reason": "file_missing"}]

    # A current version an earlier release stored and the engine refuses finds nothing.
    refused_body = _body()
    refused_body["fields"][0]["locators"].append({"kind": "pattern", "pattern": LOOKBEHIND})
    version = store_version(
        setup.env.session_factory, setup.tenant.tenant_id, setup.workflow_id, refused_body
    )
    stale = ok(_evaluate(setup, _body()), 200)
    assert stale["current_version"] == version and f"version {version} cannot run" in stale["note"]
    assert _fields(stale) == {"invoice_number": (2, 0, 0, 2), "total": (2, 1, 0, 1)}


def test_evaluation_problems_and_a_workflow_without_reviewed_documents(
    setup: Setup,  # noqa: F811
) -> None:
    empty = ok(_evaluate(setup, _body()), 200)
    assert (empty["documents"], empty["fields"], empty["regressions"]) == (0, [], [])
    assert "no reviewed documents" in empty["note"]
    accepted = _put(setup, _body(invoice_label="Order No"), require_no_regression="true")
    assert ok(accepted, 200)["version"] == 2
    assert accepted.headers["Docflow-Evaluated-Documents"] == "0"

    bad = _body()
    bad["fields"][1]["type"] = "currency"
    invalid = _problem(_evaluate(setup, bad), 422, "invalid_input")
    assert [e["field"] for e in invalid["errors"]] == ["fields.1.type"], invalid
    invalid = _problem(_evaluate(setup, {**_body(), "against_version": 0}), 422, "invalid_input")
    assert [e["field"] for e in invalid["errors"]] == ["against_version"], invalid
    _problem(_evaluate(setup, {**_body(), "against_version": 9}), 404, "not_found")
    _problem(_evaluate(setup, _body(), workflow_id="wfl_missing"), 404, "not_found")
    other = setup.env.tenant()
    url = f"/v1/workflows/{setup.workflow_id}/evaluate"
    _problem(setup.env.client.post(url, json=_body(), headers=other.headers), 404, "not_found")
