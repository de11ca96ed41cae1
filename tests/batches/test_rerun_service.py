"""Re-runs and diffs at the service level, on the database under test: which documents a re-run
takes and what they carry, how runs are matched, and what the diff reports for results written
by hand (inline and in storage, fields and line items, fields only one version has)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, DBOSClient
from sqlalchemy import make_url
from sqlalchemy.orm import Session

from docflow.batches import diff, rerun
from docflow.batches import service as batches_service
from docflow.batches.models import Batch
from docflow.batches.repository import BatchRepository
from docflow.batches.service import DocumentSpec
from docflow.batches.steps import begin_batch
from docflow.config import Settings
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import document_key
from docflow.documents.uploads.service import record_upload
from docflow.errors import InvalidInput, NotFound
from docflow.kit.clock import utcnow
from docflow.projects.service import get_project
from docflow.storage.local import LocalStorage
from docflow.system_db import migrate_system_database
from docflow.tenancy import TenantContext
from support.db_fixtures import APP_ROLE, make_batch, on_postgres

PDF = b"%PDF-1.7\n" + b"1 0 obj << >> endobj\n" * 20 + b"%%EOF\n"


@pytest.fixture(scope="module")
def client(owner_db_url: str, db_url: str) -> Iterator[DBOSClient]:
    """A DBOS client on the test database, with DBOS's tables: a re-run enqueues its execution
    in the caller's transaction (rolled back with the test); nothing runs it here."""
    url = make_url(owner_db_url)
    if on_postgres():
        migrate_system_database(
            Settings(database_url=db_url, migration_database_url=owner_db_url),
            app_role=APP_ROLE,
        )
    else:
        DBOS.migrate(url.set(drivername="sqlite").render_as_string(hide_password=False))
    app = make_url(db_url)
    app = app.set(drivername="sqlite" if app.get_backend_name() == "sqlite" else "postgresql")
    dbos_client = DBOSClient(
        system_database_url=app.render_as_string(hide_password=False), lazy=True
    )
    yield dbos_client
    dbos_client.destroy()


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "files")


def _landed(
    session: Session, storage: LocalStorage, client: DBOSClient, tenant: TenantContext, count: int
) -> tuple[str, list[str]]:
    """A begun batch of `count` documents, all but the last uploaded: (batch, documents)."""
    batch = _new_batch(session, tenant, count)
    ids = [d.id for d in batch.documents]
    for document_id in ids[:-1]:
        key = document_key(tenant.tenant_id, document_id)
        stored = storage.write_bytes(key, PDF)
        assert stored.sha256 == hashlib.sha256(PDF).hexdigest()
        record_upload(
            session,
            tenant_id=tenant.tenant_id,
            document_id=document_id,
            stored=stored,
            detected_type="pdf",
        )
    _begin(session, client, batch.id)  # the last one fails `not_uploaded`
    return batch.id, ids


def _new_batch(session: Session, tenant: TenantContext, count: int) -> Batch:
    """A batch waiting for `count` uploads: the tenant's first with its project and workflow,
    the next ones in them."""
    first = BatchRepository(session, tenant.tenant_id).page(cursor=None, limit=1)
    if first.items:
        batch = batches_service.create_batch(
            session,
            tenant,
            project_id=first.items[0].project_id,
            workflow_id=first.items[0].workflow_id,
            documents=[DocumentSpec(f"d{i}.pdf", "application/pdf", 10) for i in range(count)],
            scheduled_for=None,
            upload_deadline=utcnow() + timedelta(hours=1),
            max_documents=100,
            max_document_bytes=10_000,
        )
    else:
        batch = make_batch(session, tenant, count=count)
    return batch


def _begin(session: Session, client: DBOSClient, batch_id: str) -> None:
    begin_batch(session, client, batch_id=batch_id)
    session.expire_all()  # its updates do not touch loaded rows


def _finish(
    session: Session,
    tenant: TenantContext,
    document_id: str,
    status: str,
    result: dict[str, Any] | None = None,
    result_ref: str | None = None,
) -> None:
    repo = DocumentRepository(session, tenant.tenant_id)
    document = repo.get(document_id, fresh=True)
    assert document is not None
    confidence = result.get("confidence") if result else None
    assert repo.compare_and_set(
        document_id,
        expected_version=document.version,
        status=status,
        result=result,
        result_ref=result_ref,
        confidence=confidence,
    )
    session.expire_all()  # the update does not touch loaded rows


def _result(**fields: tuple[str | None, float]) -> dict[str, Any]:
    return {
        "status": "SUCCEEDED",
        "confidence": min((c for _, c in fields.values()), default=0.0),
        "fields": {n: {"name": n, "value": v, "confidence": c} for n, (v, c) in fields.items()},
        "line_items": {},
    }


def test_a_rerun_takes_the_landed_files_of_the_original_uploads(
    session: Session, storage: LocalStorage, client: DBOSClient, tenant_a: TenantContext
) -> None:
    batch_id, ids = _landed(session, storage, client, tenant_a, 3)
    done = rerun.rerun_batch(session, client, tenant_a, batch_id=batch_id, workflow_version=None)
    assert [d.id for d in done.skipped] == [ids[2]]
    assert [d.source_document_id for d in done.batch.documents] == ids[:2]
    repo = DocumentRepository(session, tenant_a.tenant_id)
    for new in done.batch.documents:
        old = repo.get(new.source_document_id or "")
        assert old is not None and new.storage_key == old.storage_key is not None
        assert (new.status, new.size, new.sha256) == ("UPLOADED", old.size, old.sha256)
        # found by the tenant-wide document queries like any other document of its workflow
        assert (new.project_id, new.workflow_id) == (old.project_id, old.workflow_id)
        assert new.project_id is not None and new.workflow_id is not None
    assert (done.batch.document_count, done.batch.uploaded_count) == (2, 2)
    project = get_project(session, tenant_a, project_id=done.batch.project_id)
    assert (project.batch_count, project.document_count) == (2, 5)
    # A re-run of the re-run: the sources stay the original uploads.
    _begin(session, client, done.batch.id)
    again = rerun.rerun_batch(session, client, tenant_a, batch_id=done.batch.id, workflow_version=1)
    assert again.batch.rerun_of == done.batch.id and again.skipped == []
    assert [d.source_document_id for d in again.batch.documents] == ids[:2]


def test_rerun_refusals_change_nothing(
    session: Session,
    storage: LocalStorage,
    client: DBOSClient,
    tenant_a: TenantContext,
    tenant_b: TenantContext,
) -> None:
    batch_id, _ = _landed(session, storage, client, tenant_a, 2)
    waiting = _new_batch(session, tenant_a, 1)
    with pytest.raises(InvalidInput) as refused:
        rerun.rerun_batch(session, client, tenant_a, batch_id=batch_id, workflow_version=2)
    assert refused.value.field == "workflow_version"
    with pytest.raises(NotFound):
        rerun.rerun_batch(session, client, tenant_b, batch_id=batch_id, workflow_version=None)
    with pytest.raises(rerun.BatchNotStarted):
        rerun.rerun_batch(session, client, tenant_a, batch_id=waiting.id, workflow_version=None)
    listed = BatchRepository(session, tenant_a.tenant_id).page(cursor=None, limit=10)
    assert sorted(b.id for b in listed.items) == sorted([batch_id, waiting.id])


def test_the_diff_compares_fields_line_items_and_stored_results(
    session: Session, storage: LocalStorage, client: DBOSClient, tenant_a: TenantContext
) -> None:
    batch_id, ids = _landed(session, storage, client, tenant_a, 3)
    before = _result(number=("INV-1", 0.9), total=("10.00", 0.6))
    before["line_items"] = {"lines": {"name": "lines", "rows": [{"a": "1"}], "confidence": 0.7}}
    _finish(session, tenant_a, ids[0], "REVIEW_REQUIRED", before)
    _finish(session, tenant_a, ids[1], "SUCCEEDED", _result(number=("INV-2", 0.95)))
    done = rerun.rerun_batch(session, client, tenant_a, batch_id=batch_id, workflow_version=None)
    first, second = (d.id for d in done.batch.documents)
    after = _result(number=("INV-1", 0.9), total=("10.50", 0.95), date=("2026-01-02", 0.8))
    after["line_items"] = {"lines": {"name": "lines", "rows": [{"a": "2"}], "confidence": 0.5}}
    _finish(session, tenant_a, first, "SUCCEEDED", after)
    # The second's result is too large to keep inline: read back from storage.
    ref = document_key(tenant_a.tenant_id, second, "result.json")
    stored = _result(number=("INV-2", 0.95))
    storage.write_bytes(ref, json.dumps(stored).encode())
    _finish(session, tenant_a, second, "SUCCEEDED", None, ref)

    found = diff.diff_batches(
        session,
        storage,
        tenant_a,
        batch_id=done.batch.id,
        against=batch_id,
        cursor=None,
        limit=10,
        max_result_bytes=1_000_000,
    )
    one, two, skipped = found.items
    assert (skipped.document_id, skipped.against_document_id) == (None, ids[2])
    assert (skipped.status_before, skipped.status_after, skipped.changed) == ("FAILED", None, True)
    assert (one.status_before, one.status_after, one.status_changed) == (
        "REVIEW_REQUIRED",
        "SUCCEEDED",
        True,
    )
    changes = {(f.kind, f.name): f for f in one.fields}
    assert list(changes) == [
        ("field", "number"),
        ("field", "total"),
        ("field", "date"),
        ("line_items", "lines"),
    ]
    assert not changes[("field", "number")].changed
    total = changes[("field", "total")]
    assert (total.value_before, total.value_after, total.changed, total.confidence) == (
        "10.00",
        "10.50",
        True,
        "improved",
    )
    date = changes[("field", "date")]
    assert (date.value_before, date.confidence_before, date.changed, date.confidence) == (
        None,
        None,
        True,
        None,
    )
    lines = changes[("line_items", "lines")]
    assert (lines.value_before, lines.value_after, lines.confidence) == (
        [{"a": "1"}],
        [{"a": "2"}],
        "worsened",
    )
    assert (two.changed, [f.changed for f in two.fields]) == (False, [False])
    assert found.summary == diff.DiffSummary(
        documents=3,
        matched=2,
        only_in_batch=0,
        only_in_against=1,
        documents_changed=2,
        statuses_changed=1,
        fields_compared=5,
        fields_changed=3,
        confidence_improved=1,
        confidence_worsened=1,
    )
    # A later page: no summary; the other direction: the skipped upload is listed.
    page = diff.diff_batches(
        session,
        storage,
        tenant_a,
        batch_id=batch_id,
        against=done.batch.id,
        cursor=None,
        limit=2,
        max_result_bytes=1_000_000,
    )
    assert page.next_cursor is not None and page.summary is not None
    rest = diff.diff_batches(
        session,
        storage,
        tenant_a,
        batch_id=batch_id,
        against=done.batch.id,
        cursor=page.next_cursor,
        limit=2,
        max_result_bytes=1_000_000,
    )
    (last,) = rest.items
    assert rest.summary is None and (last.document_id, last.against_document_id) == (ids[2], None)
    assert last.changed and last.status_before is None


def test_runs_relate_through_their_original_uploads_only(
    session: Session, storage: LocalStorage, client: DBOSClient, tenant_a: TenantContext
) -> None:
    batch_id, _ = _landed(session, storage, client, tenant_a, 2)
    other_id, _ = _landed(session, storage, client, tenant_a, 2)
    first = rerun.rerun_batch(session, client, tenant_a, batch_id=batch_id, workflow_version=None)
    second = rerun.rerun_batch(session, client, tenant_a, batch_id=batch_id, workflow_version=None)
    elsewhere = rerun.rerun_batch(
        session, client, tenant_a, batch_id=other_id, workflow_version=None
    )

    def compare(after: str, before: str) -> diff.BatchDiff:
        return diff.diff_batches(
            session,
            storage,
            tenant_a,
            batch_id=after,
            against=before,
            cursor=None,
            limit=10,
            max_result_bytes=1000,
        )

    two_reruns = compare(second.batch.id, first.batch.id)
    assert [(i.document_id, i.against_document_id) for i in two_reruns.items] == [
        (b.id, a.id) for a, b in zip(first.batch.documents, second.batch.documents, strict=True)
    ]
    for after, before in [
        (batch_id, other_id),
        (first.batch.id, other_id),
        (elsewhere.batch.id, batch_id),
        (first.batch.id, elsewhere.batch.id),
    ]:
        with pytest.raises(diff.BatchesNotRelated):
            compare(after, before)
    with pytest.raises(InvalidInput) as itself:
        compare(batch_id, batch_id)
    assert itself.value.field == "against"
