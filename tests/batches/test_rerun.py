"""Re-running a batch against another workflow version, and comparing two runs, end to end:
the real app, DBOS and engine, real generated PDFs, on the database under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from typer.testing import CliRunner

from docflow.cli import app as cli_app
from docflow.documents.repository import DocumentRepository
from support.api_fixtures import collect, ok, workflow_body
from support.dbos_fixtures import (  # noqa: F401
    Setup,
    create_batch,
    dbos_env,
    documents,
    get_batch,
    invoice_pdf,
    setup,
    submit,
    upload_path,
    wait_terminal,
)

PDF = "application/pdf"


def _finished(s: Setup, files: list[tuple[str, str, bytes]], missing: int = 0) -> dict[str, Any]:
    """A batch of `files` (uploaded) and `missing` declared documents never uploaded, started
    and run to its end; its last state."""
    declared = [(n, c, len(d)) for n, c, d in files]
    declared += [(f"missing-{i}.pdf", PDF, 100) for i in range(missing)]
    batch = create_batch(s, declared)
    for target, (_, _, data) in zip(batch["documents"], files, strict=False):
        ok(s.env.client.put(upload_path(target["upload_url"]), content=data), 200)
    ok(s.env.client.post(f"/v1/batches/{batch['id']}/start", headers=s.tenant.headers), 202)
    return wait_terminal(s, batch["id"])


def _publish(s: Setup, total_label: str) -> int:
    """Publish a new version of the workflow whose `total` is read after `total_label`."""
    body = workflow_body("invoice")
    body["fields"][1]["locators"] = [{"kind": "label", "labels": [total_label]}]
    url = f"/v1/workflows/{s.workflow_id}"
    version: int = ok(s.env.client.put(url, json=body, headers=s.tenant.headers), 200)["version"]
    return version


def _rerun(s: Setup, batch_id: str, body: Any = None, **headers: str) -> Any:
    url = f"/v1/batches/{batch_id}/rerun"
    return s.env.client.post(url, json=body, headers={**s.tenant.headers, **headers})


def _diff(s: Setup, batch_id: str, against: str, **params: Any) -> Any:
    url = f"/v1/batches/{batch_id}/diff"
    return s.env.client.get(url, params={"against": against, **params}, headers=s.tenant.headers)


def _problem(response: Any, status: int, code: str, field: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == code, body
    if field is not None:
        assert [e["field"] for e in body["errors"]] == [field], body


def _flow_done(workflow_id: str) -> str:
    """The flow's status once DBOS records its end (a moment after its last commit)."""
    DBOS.retrieve_workflow(workflow_id).get_result()
    (flow,) = DBOS.list_workflows(workflow_ids=[workflow_id])
    return str(flow.status)


def test_a_rerun_runs_the_stored_files_against_another_version_and_the_diff_shows_it(
    setup: Setup,  # noqa: F811
) -> None:
    files = [
        ("a.pdf", PDF, invoice_pdf("INV-0001", "10.00")),
        ("b.pdf", PDF, invoice_pdf("INV-0002", "20.50")),
        ("notes.txt", "text/plain", b"just some words, not a document\n"),
    ]
    original = _finished(setup, files, missing=1)
    first = {d["name"]: d for d in documents(setup, original["id"])}
    assert first["a.pdf"]["status"] == "SUCCEEDED"
    assert (first["notes.txt"]["status"], first["missing-0.pdf"]["error_code"]) == (
        "FAILED",
        "not_uploaded",
    )
    version = _publish(setup, "Amount Due")  # the PDFs have no such label: no total
    assert version == 2

    answer = _rerun(setup, original["id"], {"workflow_version": 2}, **{"Idempotency-Key": "r-1"})
    rerun = ok(answer, 202)
    assert (rerun["rerun_of"], rerun["workflow_id"], rerun["workflow_version"]) == (
        original["id"],
        setup.workflow_id,
        2,
    )
    assert rerun["project_id"] == original["project_id"]
    assert (rerun["document_count"], rerun["uploaded_count"]) == (3, 3)
    assert rerun["status_url"].endswith(f"/v1/batches/{rerun['id']}")
    sources = {d["source_document_id"]: d for d in rerun["documents"]}
    uploaded = {first[n]["id"] for n in ("a.pdf", "b.pdf", "notes.txt")}
    assert set(sources) == uploaded
    assert [(s["id"], s["error_code"]) for s in rerun["skipped"]] == [
        (first["missing-0.pdf"]["id"], "not_uploaded")
    ]
    # The same key and body: the first answer again, no second batch.
    replay = _rerun(setup, original["id"], {"workflow_version": 2}, **{"Idempotency-Key": "r-1"})
    assert ok(replay, 202) == rerun and replay.headers["Idempotency-Replayed"] == "true"
    listed = collect(setup.env.client, "/v1/batches", setup.tenant.headers, 50)
    assert sum(1 for b in listed if b["rerun_of"] == original["id"]) == 1

    done = wait_terminal(setup, rerun["id"])
    again = {d["name"]: d for d in documents(setup, rerun["id"])}
    assert {d["source_document_id"] for d in again.values()} == uploaded
    assert again["notes.txt"]["status"] == "FAILED"
    assert again["a.pdf"]["status"] != "SUCCEEDED"  # the required total is missing now
    assert done["document_count"] == 3
    # The same stored objects, not copies; the files are still where the originals put them.
    with setup.env.session_factory() as session:
        repo = DocumentRepository(session, setup.tenant.tenant_id)
        for doc in again.values():
            new, old = repo.get(doc["id"]), repo.get(doc["source_document_id"])
            assert new is not None and old is not None
            assert (new.storage_key, new.sha256) == (old.storage_key, old.sha256)
            assert new.storage_key is not None
            root = Path(setup.env.settings.storage_url.removeprefix("file://"))
            assert (root / new.storage_key).is_file()
    # Through the normal pipeline: the batch flow under the new batch's id, one flow per document.
    assert _flow_done(f"complete:{rerun['id']}") == "SUCCESS"
    assert {_flow_done(f"doc:{d['id']}") for d in again.values()} == {"SUCCESS"}

    diff = ok(_diff(setup, rerun["id"], original["id"]), 200)
    assert (diff["batch_id"], diff["against"]) == (rerun["id"], original["id"])
    assert diff["summary"] == {
        "documents": 4,
        "matched": 3,
        "only_in_batch": 0,
        "only_in_against": 1,
        "documents_changed": 3,  # a and b lost their total; missing-0 was not re-run
        "statuses_changed": 2,
        "fields_compared": 4,
        "fields_changed": 2,
        "confidence_improved": 0,
        "confidence_worsened": diff["summary"]["confidence_worsened"],
    }
    assert diff["summary"]["confidence_worsened"] >= 2
    items = {i["name"]: i for i in diff["items"]}
    # The re-run's documents, then the upload only the original ran.
    assert [i["name"] for i in diff["items"]][-1] == "missing-0.pdf"
    assert set(items) == {"a.pdf", "b.pdf", "notes.txt", "missing-0.pdf"}
    skipped = items["missing-0.pdf"]
    assert (skipped["document_id"], skipped["against_document_id"]) == (
        None,
        first["missing-0.pdf"]["id"],
    )
    assert (skipped["status_before"], skipped["status_after"], skipped["changed"]) == (
        "FAILED",
        None,
        True,
    )
    a = items["a.pdf"]
    assert (a["source_document_id"], a["against_document_id"]) == (
        first["a.pdf"]["id"],
        first["a.pdf"]["id"],
    )
    assert (a["document_id"], a["status_before"]) == (again["a.pdf"]["id"], "SUCCEEDED")
    assert a["status_after"] == again["a.pdf"]["status"] and a["status_changed"] and a["changed"]
    fields = {f["name"]: f for f in a["fields"]}
    assert fields["invoice_number"]["value_before"] == fields["invoice_number"]["value_after"]
    assert fields["invoice_number"]["changed"] is False
    total = fields["total"]
    assert (total["value_before"], total["value_after"], total["changed"]) == ("10.00", None, True)
    assert total["confidence"] == "worsened" and total["kind"] == "field"
    assert total["confidence_before"] > total["confidence_after"]
    notes = items["notes.txt"]
    assert (notes["status_before"], notes["status_after"], notes["changed"]) == (
        "FAILED",
        "FAILED",
        False,
    )
    # A page at a time: the summary comes with the first page only.
    url = f"/v1/batches/{rerun['id']}/diff"
    paged = collect(setup.env.client, url, setup.tenant.headers, 1, {"against": original["id"]})
    assert paged == diff["items"] and len(paged) == 4
    # A page that ends the re-run's documents is filled from the original's.
    two = ok(_diff(setup, rerun["id"], original["id"], limit=2), 200)
    rest = ok(_diff(setup, rerun["id"], original["id"], limit=2, cursor=two["next_cursor"]), 200)
    assert rest["items"] == diff["items"][2:] and rest["next_cursor"] is None
    assert two["summary"] == diff["summary"] and rest["summary"] is None
    second = _diff(setup, rerun["id"], original["id"], limit=1)
    cursor = ok(second, 200)["next_cursor"]
    later = ok(_diff(setup, rerun["id"], original["id"], limit=1, cursor=cursor), 200)
    assert later["summary"] is None and len(later["items"]) == 1

    # The other direction: the original's documents, the one not re-run has no counterpart.
    back = ok(_diff(setup, original["id"], rerun["id"]), 200)
    assert back["summary"]["only_in_batch"] == 1 and back["summary"]["only_in_against"] == 0
    gone = {i["name"]: i for i in back["items"]}["missing-0.pdf"]
    assert (gone["document_id"], gone["against_document_id"]) == (
        first["missing-0.pdf"]["id"],
        None,
    )
    reverse_total = {f["name"]: f for f in {i["name"]: i for i in back["items"]}["a.pdf"]["fields"]}
    assert reverse_total["total"]["confidence"] == "improved"

    # A re-run of the re-run (no body: the current version, 2) runs the same uploads.
    rerun2 = ok(_rerun(setup, rerun["id"]), 202)
    assert (rerun2["rerun_of"], rerun2["workflow_version"]) == (rerun["id"], 2)
    assert {d["source_document_id"] for d in rerun2["documents"]} == uploaded
    wait_terminal(setup, rerun2["id"])
    same = ok(_diff(setup, rerun2["id"], rerun["id"]), 200)["summary"]
    assert (same["matched"], same["fields_changed"], same["statuses_changed"]) == (3, 0, 0)
    assert ok(_diff(setup, rerun2["id"], original["id"]), 200)["summary"]["matched"] == 3

    # Back to version 1: the totals return.
    rerun3 = ok(_rerun(setup, rerun["id"], {"workflow_version": 1}), 202)
    wait_terminal(setup, rerun3["id"])
    restored = ok(_diff(setup, rerun3["id"], rerun["id"]), 200)["summary"]
    assert (restored["fields_changed"], restored["confidence_improved"]) == (2, 2)
    assert ok(_diff(setup, rerun3["id"], original["id"]), 200)["summary"]["fields_changed"] == 0


def test_rerun_refusals(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-0003", "3.00")
    finished = _finished(setup, [("a.pdf", PDF, pdf)])
    _problem(
        _rerun(setup, finished["id"], {"workflow_version": 99}),
        422,
        "invalid_input",
        "workflow_version",
    )
    _problem(
        _rerun(setup, finished["id"], {"workflow_version": 0}),
        422,
        "invalid_input",
        "workflow_version",
    )
    _problem(_rerun(setup, finished["id"], {"version": 1}), 422, "invalid_input", "version")
    waiting = create_batch(setup, [("a.pdf", PDF, len(pdf))])
    _problem(_rerun(setup, waiting["id"]), 409, "batch_not_started")
    empty = _finished(setup, [], missing=2)
    assert empty["status"] == "FAILED"
    _problem(_rerun(setup, empty["id"]), 409, "nothing_to_rerun")
    _problem(_rerun(setup, "bat_nope"), 404, "not_found")
    # Nothing was made by the refusals.
    listed = collect(setup.env.client, "/v1/batches", setup.tenant.headers, 50)
    assert [b for b in listed if b["rerun_of"]] == []


def test_diff_refusals(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-0004", "4.00")
    one = _finished(setup, [("a.pdf", PDF, pdf)])
    other = _finished(setup, [("a.pdf", PDF, pdf)])  # the same bytes, another upload
    _problem(_diff(setup, one["id"], other["id"]), 422, "batches_not_related", "against")
    rerun = ok(_rerun(setup, one["id"]), 202)
    wait_terminal(setup, rerun["id"])
    _problem(_diff(setup, rerun["id"], other["id"]), 422, "batches_not_related", "against")
    _problem(_diff(setup, rerun["id"], rerun["id"]), 422, "invalid_input", "against")
    _problem(_diff(setup, rerun["id"], "bat_nope"), 404, "not_found")
    missing = setup.env.client.get(f"/v1/batches/{rerun['id']}/diff", headers=setup.tenant.headers)
    _problem(missing, 422, "invalid_input", "against")
    _problem(_diff(setup, rerun["id"], one["id"], cursor="%%%"), 422, "invalid_input", "cursor")
    _problem(_diff(setup, rerun["id"], one["id"], limit=0), 422, "invalid_input", "limit")
    # Unchanged (same version, same bytes): nothing changed.
    summary = ok(_diff(setup, rerun["id"], one["id"]), 200)["summary"]
    assert (summary["matched"], summary["documents_changed"], summary["fields_changed"]) == (
        1,
        0,
        0,
    )


def test_the_cli_reruns_and_diffs(
    setup: Setup,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = setup.env.settings
    for name, value in {
        "DOCFLOW_ENV": "test",
        "DOCFLOW_HOME": str(settings.home),
        "DOCFLOW_DATABASE_URL": settings.database_url,
        "DOCFLOW_MIGRATION_DATABASE_URL": settings.migration_database_url,
        "DOCFLOW_STORAGE_URL": settings.storage_url,
        "COLUMNS": "250",
    }.items():
        monkeypatch.setenv(name, value)
    original = _finished(setup, [("a.pdf", PDF, invoice_pdf("INV-0005", "5.00"))], missing=1)
    _publish(setup, "Amount Due")
    runner = CliRunner()
    tenant = setup.tenant.tenant_id
    result = runner.invoke(
        cli_app, ["batches", "rerun", "--tenant", tenant, original["id"], "--version", "2"]
    )
    assert result.exit_code == 0, result.output
    # The pipeline's threads run in this process and may log while the command runs: read the
    # command's own lines, not whole-output positions.
    line = next(line for line in result.stdout.splitlines() if "workflow version 2" in line)
    new_id = next(word for word in line.split() if word.startswith("bat_"))
    assert new_id != original["id"]
    assert "skipped" in result.stdout and "not_uploaded" in result.stdout
    done = wait_terminal(setup, new_id)
    assert done["workflow_version"] == 2 and get_batch(setup, new_id)["rerun_of"] == original["id"]
    result = runner.invoke(
        cli_app,
        ["batches", "diff", "--tenant", tenant, new_id, "--against", original["id"], "--json"],
    )
    assert result.exit_code == 0, result.output
    whole, _ = json.JSONDecoder().raw_decode(result.stdout, result.stdout.index("{"))
    assert whole["summary"]["fields_changed"] == 1
    item, skipped = whole["items"]
    assert (skipped["name"], skipped["document_id"], skipped["status_before"]) == (
        "missing-0.pdf",
        None,
        "FAILED",
    )
    total = {f["name"]: f for f in item["fields"]}["total"]
    assert (total["value_before"], total["value_after"]) == ("5.00", None)
    table = runner.invoke(
        cli_app, ["batches", "diff", "--tenant", tenant, new_id, "--against", original["id"]]
    )
    assert (
        table.exit_code == 0 and "5.00" in table.stdout and "1 of 2 fields changed" in table.stdout
    )
    assert "missing-0.pdf" in table.stdout and "only before" in table.stdout
    refused = runner.invoke(
        cli_app, ["batches", "rerun", "--tenant", tenant, original["id"], "--version", "9"]
    )
    assert refused.exit_code == 1 and "no version 9" in refused.output
    # Another tenant's batch is not found under this tenant.
    stranger = setup.env.tenant()
    refused = runner.invoke(
        cli_app,
        ["batches", "diff", "--tenant", stranger.tenant_id, new_id, "--against", original["id"]],
    )
    assert refused.exit_code == 1 and "not found" in refused.output
