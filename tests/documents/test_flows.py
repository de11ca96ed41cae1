"""The document flow on real DBOS and the real engine: every bad file ends FAILED with its own
code while good ones succeed, an unexpected error is `internal_error`, and the step bodies are
idempotent (a step run twice counts once)."""

from __future__ import annotations

import io
import os
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import pikepdf
import pytest
import structlog
from dbos import DBOS
from dbos._error import DBOSMaxStepRetriesExceeded
from typer.testing import CliRunner

from docflow.cli import app as cli_app
from docflow.documents import steps
from docflow.documents.flows import failure_kind, failure_reason
from docflow.documents.outcome import Decision, Extracted
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import REDRIVE_FLOW, redrive_document
from docflow.errors import Conflict
from docflow.events import service as events_service
from docflow.events.repository import DeadLetterRepository
from docflow.kit.clock import utcnow
from docflow.reconciler.steps import GIVE_UP, Failed
from docflow.runtime import context
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext
from support import catastrophic
from support.api_fixtures import ok, post_project, workflow_body
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    dbos_env,
    documents,
    get_batch,
    invoice_pdf,
    setup,
    submit,
    upload_path,
    wait_terminal,
)
from support.stored_workflows import lookbehind_definition, store_version

PDF = "application/pdf"


def _encrypted_pdf() -> bytes:
    out = io.BytesIO()
    with pikepdf.open(io.BytesIO(invoice_pdf("INV-X", "1.00"))) as pdf:
        pdf.save(out, encryption=pikepdf.Encryption(owner="owner", user="user"))
    return out.getvalue()


def _png_claiming(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(b"\x00" * 16))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + idat + chunk(b"IEND", b"")


def _poster_pdf() -> bytes:
    """A page of 200 x 200 inches without text: 60000 x 60000 pixels at 300 dpi."""
    out = io.BytesIO()
    with pikepdf.new() as pdf:
        pdf.add_blank_page(page_size=(14_400, 14_400))
        pdf.save(out)
    return out.getvalue()


def _tolerant_setup(dbos_env: DbosEnv, percent: float) -> Setup:  # noqa: F811
    tenant = dbos_env.tenant()
    project = post_project(dbos_env.client, tenant)
    body = workflow_body("tolerant", tolerated_failure_percent=percent)
    url = f"/v1/projects/{project['id']}/workflows"
    workflow = ok(dbos_env.client.post(url, json=body, headers=tenant.headers), 201)
    return Setup(dbos_env, tenant, project["id"], workflow["id"])


def test_bad_files_fail_with_their_codes_and_good_ones_succeed(dbos_env: DbosEnv) -> None:  # noqa: F811
    case = _tolerant_setup(dbos_env, 80)
    pdf = invoice_pdf("INV-100", "100.00")
    bad = {
        "empty.pdf": (PDF, b"", "empty_file"),
        "truncated.pdf": (PDF, pdf[: len(pdf) // 2], "corrupt_file"),
        "random.pdf": (PDF, os.urandom(4096), "unsupported_type"),
        "locked.pdf": (PDF, _encrypted_pdf(), "encrypted_pdf"),
        "huge.png": ("image/png", _png_claiming(50_000, 50_000), "image_too_large"),
        "poster.pdf": (PDF, _poster_pdf(), "image_too_large"),
        "notes.JPG": ("image/jpeg", b"plain text, not a picture\n" * 40, "unsupported_type"),
    }
    good = {"GOOD.PDF": pdf, "Other.Pdf": invoice_pdf("INV-101", "101.00"), "third.pdf": pdf}
    files = [(name, ctype, data) for name, (ctype, data, _) in bad.items()]
    files += [(name, PDF, data) for name, data in good.items()]
    batch = submit(case, files)
    done = wait_terminal(case, batch["id"])
    docs = {d["name"]: d for d in documents(case, batch["id"])}
    for name, (_, _, code) in bad.items():
        assert (docs[name]["status"], docs[name]["error_code"]) == ("FAILED", code), docs[name]
        assert docs[name]["error_reason"]
    assert {docs[name]["status"] for name in good} == {"SUCCEEDED"}
    # 7 of 10 failed: within 80 %, so partial, not failed.
    assert (done["status"], done["succeeded_count"], done["failed_count"]) == (
        "PARTIALLY_FAILED",
        3,
        7,
    )
    assert "named .jpg" in docs["notes.JPG"]["error_reason"]
    assert "page 1 is too large to read" in docs["poster.pdf"]["error_reason"]
    # No flow failed (a rejected file is an outcome, not an error), and the worker still works.
    # The batch is terminal once the last document's persist commits, a moment before DBOS
    # records that document's flow as ended: wait for every flow's end first.
    flow_ids = [f"doc:{d['id']}" for d in batch["documents"]]
    for flow_id in flow_ids:
        DBOS.retrieve_workflow(flow_id).get_result()
    flows = DBOS.list_workflows(workflow_ids=flow_ids)
    assert len(flows) == 10 and {f.status for f in flows} == {"SUCCESS"}
    again = submit(case, [("after.pdf", PDF, pdf)])
    assert wait_terminal(case, again["id"])["status"] == "SUCCEEDED"
    assert _letters(case) == []  # a file's own fault is no dead letter


def test_a_catastrophic_tenant_pattern_ends_the_document_at_once(dbos_env: DbosEnv) -> None:  # noqa: F811
    """The workflow's `(a+)+$` over 29 a's and a "!" held the interpreter lock for minutes on
    Python's re; on RE2 the document runs through the whole flow in moments and FAILS, its
    required fields not found."""
    tenant = dbos_env.tenant()
    project = post_project(dbos_env.client, tenant)
    url = f"/v1/projects/{project['id']}/workflows"
    body = catastrophic.workflow_body()
    workflow = ok(dbos_env.client.post(url, json=body, headers=tenant.headers), 201)
    case = Setup(dbos_env, tenant, project["id"], workflow["id"])
    started = time.monotonic()
    batch = submit(case, [("evil.pdf", PDF, catastrophic.pdf())])
    done = wait_terminal(case, batch["id"], timeout=30)
    assert time.monotonic() - started < 10  # queue polling included; minutes before
    (doc,) = documents(case, batch["id"])
    assert (done["status"], doc["status"]) == ("FAILED", "FAILED")
    detail = ok(dbos_env.client.get(f"/v1/documents/{doc['id']}", headers=tenant.headers), 200)
    fields = detail["result"]["fields"]
    assert (fields["reference"]["value"], fields["code"]["value"]) == (None, None)


def test_a_version_re2_cannot_run_fails_its_documents_invalid_workflow(setup: Setup) -> None:  # noqa: F811
    """A batch pinned to a version an earlier release stored with a lookbehind pattern: each
    document FAILS `invalid_workflow`, the reason naming the pattern and why."""
    env, tenant = setup.env, setup.tenant
    version = store_version(
        env.session_factory, tenant.tenant_id, setup.workflow_id, lookbehind_definition()
    )
    batch = submit(setup, [("a.pdf", PDF, invoice_pdf("A-1", "1.00")), ("b.pdf", PDF, b"%PDF")])
    assert batch["workflow_version"] == version
    assert wait_terminal(setup, batch["id"])["status"] == "FAILED"
    for doc in documents(setup, batch["id"]):
        assert (doc["status"], doc["error_code"]) == ("FAILED", "invalid_workflow")
        reason = doc["error_reason"]
        assert f"version {version} of workflow {setup.workflow_id} cannot run" in reason
        assert "fields.0.locators.1.pattern:" in reason and "field 'invoice_number'" in reason
        assert "lookbehind is not supported" in reason


def _stored(env: DbosEnv, tenant_id: str, document_id: str) -> list[Path]:
    folder = env.settings.home / "files" / "tenants" / tenant_id / "documents" / document_id
    return list(folder.glob("upload-*"))


def test_an_unexpected_error_ends_the_document_internal_error(
    setup: Setup,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pdf = invoice_pdf("INV-200", "200.00")
    batch = submit(
        setup, [("a.pdf", PDF, pdf), ("b.pdf", PDF, pdf)], scheduled_for="2099-01-01T00:00:00Z"
    )
    lost = batch["documents"][0]["id"]
    kept = {}
    for path in _stored(setup.env, setup.tenant.tenant_id, lost):
        kept[path] = path.read_bytes()
        path.unlink()  # the stored file vanished: not a transient error, not a rejection
    ok(setup.env.client.post(f"/v1/batches/{batch['id']}/start", headers=setup.tenant.headers), 202)
    done = wait_terminal(setup, batch["id"])
    docs = {d["id"]: d for d in documents(setup, batch["id"])}
    assert (docs[lost]["status"], docs[lost]["error_code"]) == ("FAILED", "internal_error")
    assert "ObjectNotFound" in docs[lost]["error_reason"]
    assert done["status"] == "FAILED" and done["failed_count"] == 1  # 50 % > 10 % tolerated
    flow_ids = [f"doc:{d['id']}" for d in batch["documents"]]
    for flow_id in flow_ids:  # the batch is terminal a moment before the flows' ends are recorded
        DBOS.retrieve_workflow(flow_id).get_result()
    flows = DBOS.list_workflows(workflow_ids=flow_ids)
    assert len(flows) == 2 and {f.status for f in flows} == {"SUCCESS"}
    steps = [s["function_name"] for s in DBOS.list_workflow_steps(f"doc:{lost}")]
    assert steps == ["document.extract", "document.fail"]
    # One dead letter of consumer `documents` for the document, carrying its failure event;
    # the document that succeeded has none.
    letters = _letters(setup)
    assert [(x["consumer"], x["target"], x["category"]) for x in letters] == [
        ("documents", lost, "ObjectNotFound")
    ]
    (letter,) = letters
    assert letter["attempts"] == 1 and "ObjectNotFound" in letter["error"]
    assert letter["event_type"] == "docflow.document.failed.v1"
    assert letter["envelope"]["data"]["document_id"] == lost
    assert letter["redriven_at"] is None
    # The file is back: a redrive runs the document again, as a revision of its outcome, and
    # its batch's counts and status follow.
    for path, data in kept.items():
        path.write_bytes(data)
    settings = setup.env.settings
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("DOCFLOW_MIGRATION_DATABASE_URL", settings.resolved_migration_database_url())
    monkeypatch.setenv("DOCFLOW_LOG_LEVEL", "CRITICAL")  # the runner's stderr closes after each
    saved = structlog.get_config()
    try:
        _redrive_round_trip(setup, batch["id"], lost, letter["id"])
    finally:
        structlog.configure(**saved)


def _redrive_round_trip(setup: Setup, batch_id: str, lost: str, letter_id: str) -> None:  # noqa: F811
    runner = CliRunner()
    tenant_id = setup.tenant.tenant_id
    args = ["dead-letters", "redrive", "--tenant", tenant_id, "--consumer", "documents"]
    redriven = runner.invoke(cli_app, [*args, "--by", "ops@example.com", "--reason", "restored"])
    assert redriven.exit_code == 0 and "1 redriven, 0 refused" in redriven.output, redriven.output
    workflow_id = f"doc:{lost}:redrive:{letter_id}"
    assert DBOS.retrieve_workflow(workflow_id).get_result() == "SUCCEEDED"
    steps = [s["function_name"] for s in DBOS.list_workflow_steps(workflow_id)]
    assert steps == ["document.rerun", "document.revise"]
    url = f"/v1/documents/{lost}"
    after = ok(setup.env.client.get(url, headers=setup.tenant.headers), 200)
    assert (after["status"], after["error_code"]) == ("SUCCEEDED", None)
    assert after["confidence"] is not None and after["result"]["fields"]
    finished = get_batch(setup, batch_id)
    assert (finished["status"], finished["succeeded_count"], finished["failed_count"]) == (
        "SUCCEEDED",
        2,
        0,
    )
    (letter,) = _letters(setup)
    assert (letter["redriven_by"], letter["redrive_reason"]) == ("ops@example.com", "restored")
    assert letter["redriven_at"] is not None
    # Twice: the letter is redriven already, and nothing runs again.
    again = runner.invoke(
        cli_app,
        [
            "dead-letters",
            "redrive",
            letter["id"],
            "--tenant",
            tenant_id,
            "--by",
            "ops",
            "--reason",
            "twice",
        ],
    )
    assert again.exit_code == 1 and "redriven already" in again.output
    assert len(DBOS.list_workflows(workflow_id_prefix=f"doc:{lost}:redrive:")) == 1
    assert get_batch(setup, batch_id)["succeeded_count"] == 2


def _letters(case: Setup) -> list[dict[str, Any]]:
    url = "/v1/dead-letters?consumer=documents"
    items: list[dict[str, Any]] = ok(case.env.client.get(url, headers=case.tenant.headers), 200)[
        "items"
    ]
    return items


def test_step_bodies_count_once_when_run_twice(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-300", "300.00")
    batch = submit(setup, [("a.pdf", PDF, pdf)], scheduled_for="2099-01-01T00:00:00Z")
    document_id, tenant_id = batch["documents"][0]["id"], setup.tenant.tenant_id
    services = context.services()
    with services.session_factory() as session:
        target = steps.target(session, tenant_id=tenant_id, document_id=document_id)
    assert target.storage_key is not None
    data = services.storage.read_bytes(target.storage_key, max_bytes=len(pdf))
    assert steps.sniff_type(data) == "pdf"
    begun = []
    for _ in range(2):
        with services.write_session() as session, session.begin():
            begun.append(
                steps.begin_document(
                    session,
                    services.client,
                    tenant_id=tenant_id,
                    document_id=document_id,
                    detected_type="pdf",
                )
            )
    assert [b.status for b in begun] == ["PROCESSING", "PROCESSING"]
    assert begun[0].version == begun[1].version == target.version + 1
    extraction = steps.run_engine(
        services.storage,
        data,
        target,
        tenant_id=tenant_id,
        document_id=document_id,
        version=begun[0].version,
        ocr=services.ocr(),
        limits=services.limits,
        inline_max_bytes=100,  # forces the result into storage
    )
    assert isinstance(extraction, Extracted)
    assert extraction.result is None and extraction.result_ref is not None
    assert services.storage.head(extraction.result_ref) is not None
    assert steps.decide(extraction) == Decision("SUCCEEDED")
    for _ in range(2):
        with services.write_session() as session, session.begin():
            steps.persist(
                session,
                services.client,
                tenant_id=tenant_id,
                document_id=document_id,
                extraction=extraction,
            )
    counts = get_batch(setup, batch["id"])
    assert (counts["succeeded_count"], counts["failed_count"], counts["review_count"]) == (1, 0, 0)
    (doc,) = documents(setup, batch["id"])
    assert doc["status"] == "SUCCEEDED" and doc["confidence"] == extraction.confidence
    # The API reads a result kept in storage back, exactly as an inline one would be.
    detail = ok(
        setup.env.client.get(f"/v1/documents/{document_id}", headers=setup.tenant.headers), 200
    )
    assert detail["result"]["status"] == "SUCCEEDED"
    assert detail["result"]["confidence"] == extraction.confidence


def test_persist_records_the_outcome_when_the_document_changed_since_extract(
    setup: Setup,  # noqa: F811
) -> None:
    pdf = invoice_pdf("INV-310", "310.00")
    batch = submit(setup, [("a.pdf", PDF, pdf)], scheduled_for="2099-01-01T00:00:00Z")
    document_id, tenant_id = batch["documents"][0]["id"], setup.tenant.tenant_id
    services = context.services()
    with services.write_session() as session, session.begin():
        begun = steps.begin_document(
            session,
            services.client,
            tenant_id=tenant_id,
            document_id=document_id,
            detected_type="pdf",
        )
        repo = DocumentRepository(session, tenant_id)
        held = repo.get(document_id)  # the session now holds this version (until `held` goes)
        assert held is not None and held.version == begun.version
        assert repo.compare_and_set(
            document_id, expected_version=begun.version, updated_at=utcnow()
        )
        extraction = Extracted(
            status="SUCCEEDED",
            confidence=0.9,
            reasons=(),
            result={},
            result_ref=None,
            version=begun.version,
            batch_id=batch["id"],
        )
        status = steps.persist(
            session,
            services.client,
            tenant_id=tenant_id,
            document_id=document_id,
            extraction=extraction,
        )
    assert status == "SUCCEEDED"
    assert get_batch(setup, batch["id"])["succeeded_count"] == 1


class _FlakyStorage:
    """The real storage, whose reads of one key fail `failures` times with an I/O error first."""

    def __init__(self, inner: Storage, key: str, failures: int) -> None:
        self.inner, self.key, self.failures = inner, key, failures

    def read_bytes(self, key: str, *, max_bytes: int) -> bytes:
        if key == self.key and self.failures > 0:
            self.failures -= 1
            raise OSError("storage briefly unreachable")
        return self.inner.read_bytes(key, max_bytes=max_bytes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_transient_storage_error_is_retried(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-400", "400.00")
    batch = submit(setup, [("a.pdf", PDF, pdf)], scheduled_for="2099-01-01T00:00:00Z")
    (doc,) = documents(setup, batch["id"])
    services = context.services()
    real = services.storage
    key = _stored(setup.env, setup.tenant.tenant_id, doc["id"])[0]
    flaky = _FlakyStorage(real, key.relative_to(setup.env.settings.home / "files").as_posix(), 2)
    services.storage = flaky  # type: ignore[assignment]
    try:
        url = f"/v1/batches/{batch['id']}/start"
        ok(setup.env.client.post(url, headers=setup.tenant.headers), 202)
        assert wait_terminal(setup, batch["id"])["status"] == "SUCCEEDED"
    finally:
        services.storage = real
    assert flaky.failures == 0  # both failures happened, and the third attempt succeeded


def test_unexpected_errors_have_readable_reasons() -> None:
    gave_up = DBOSMaxStepRetriesExceeded("document.persist", 5, [OSError(), TimeoutError()])
    assert failure_reason(gave_up) == (
        "document.persist still failed after 5 attempts (TimeoutError)"
    )
    assert failure_reason(KeyError("secret text")) == "processing failed: KeyError"
    assert failure_kind(gave_up) == ("TimeoutError", 5)
    assert failure_kind(KeyError("secret text")) == ("KeyError", 1)


def test_a_redrive_that_fails_again_leaves_a_new_dead_letter(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-210", "210.00")
    batch = submit(setup, [("a.pdf", PDF, pdf)], scheduled_for="2099-01-01T00:00:00Z")
    (lost,) = [d["id"] for d in batch["documents"]]
    tenant = TenantContext(tenant_id=setup.tenant.tenant_id)
    kept = {path: path.read_bytes() for path in _stored(setup.env, tenant.tenant_id, lost)}
    for path in kept:
        path.unlink()
    ok(setup.env.client.post(f"/v1/batches/{batch['id']}/start", headers=setup.tenant.headers), 202)
    assert wait_terminal(setup, batch["id"])["status"] == "FAILED"
    DBOS.retrieve_workflow(f"doc:{lost}").get_result()
    (first,) = _letters(setup)
    s = context.services()

    def redrive(letter_id: str) -> str:
        with s.write_session() as session, session.begin():
            letter = events_service.redrive(
                session, s.client, tenant, letter_id=letter_id, actor="ops", reason="again"
            )
            workflow_id = letter.redrive_workflow_id
        assert workflow_id is not None
        return str(DBOS.retrieve_workflow(workflow_id).get_result())

    # The file is still missing: the document stays FAILED, its batch as it was, and a new
    # letter (of the redrive's flow) waits.
    assert redrive(first["id"]) == "FAILED"
    doc = ok(setup.env.client.get(f"/v1/documents/{lost}", headers=setup.tenant.headers), 200)
    assert (doc["status"], doc["error_code"]) == ("FAILED", "internal_error")
    done = get_batch(setup, batch["id"])
    assert (done["status"], done["failed_count"], done["succeeded_count"]) == ("FAILED", 1, 0)
    second, old = _letters(setup)
    assert old["id"] == first["id"] and old["redriven_by"] == "ops"
    assert (second["target"], second["category"], second["redriven_at"]) == (
        lost,
        "ObjectNotFound",
        None,
    )
    for path, data in kept.items():
        path.write_bytes(data)
    assert redrive(second["id"]) == "SUCCEEDED"
    done = get_batch(setup, batch["id"])
    assert (done["status"], done["failed_count"], done["succeeded_count"]) == ("SUCCEEDED", 0, 1)
    # A letter of a document no longer FAILED `internal_error` cannot run it again.
    with s.write_session() as session, session.begin():
        letter = DeadLetterRepository(session, tenant.tenant_id).get(second["id"])
        assert letter is not None
        with pytest.raises(Conflict, match="no longer failed"):
            redrive_document(session, s.client, letter)
    # A redrive flow the reconciler gives up on leaves a new letter too.
    with s.write_session() as session, session.begin():
        failed = Failed("wf-x", [tenant.tenant_id, lost, first["id"]], "x", 60.0)
        GIVE_UP[REDRIVE_FLOW](session, s.client, failed)
    newest = _letters(setup)[0]
    assert (newest["target"], newest["category"], newest["error"]) == (lost, "internal", "x")
