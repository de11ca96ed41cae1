"""A batch beginning while one of its uploads is in flight, through the real database.

The rule (docs/api.md, "A batch from start to finish"): the execution takes the documents whose
upload was recorded before it began; an upload arriving later is not recorded at all, and its
document fails `not_uploaded`. Never both, never neither: no document is counted as uploaded and
failed `not_uploaded`. The batch row serialises the two (see `uploads.service.record_upload` and
`steps.begin_batch`); each test holds one side's transaction open while the other runs.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from dbos import DBOSClient
from sqlalchemy import Engine, make_url, text
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.batches.repository import BatchRepository
from docflow.batches.steps import BatchStart, Started, begin_batch
from docflow.documents.models import Document
from docflow.documents.repository import DocumentRepository
from docflow.documents.uploads.service import receive_upload, record_upload
from docflow.documents.uploads.urls import UploadGrant
from docflow.storage.base import StoredObject
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants_service
from support.db_fixtures import make_batch, on_postgres

PDF = b"%PDF-1.7\n" + b"1 0 obj << >> endobj\n" * 20 + b"%%EOF\n"
T = TypeVar("T")


@pytest.fixture
def own_engine(db_url: str) -> Iterator[Engine]:
    """An engine of this test's own: the races below take three connections at once (the
    held upload, the racing thread, the lock probe), which must never wait for a pool that
    other tests of the session share."""
    engine = db.make_engine(db_url, pool_size=3)
    yield engine
    engine.dispose()


@pytest.fixture
def writes(own_engine: Engine) -> sessionmaker[Session]:
    return db.make_write_session_factory(own_engine)


@pytest.fixture
def client(db_url: str) -> Iterator[DBOSClient]:
    """A DBOS client that never connects: no test here counts a batch's last document (one is
    always left to process), so `begin_batch` enqueues nothing."""
    url = make_url(db_url)
    url = url.set(drivername="sqlite" if url.get_backend_name() == "sqlite" else "postgresql")
    client = DBOSClient(system_database_url=url.render_as_string(hide_password=False), lazy=True)
    yield client
    client.destroy()


@pytest.fixture
def batch_docs(session_factory: sessionmaker[Session]) -> tuple[str, str, list[str]]:
    """A committed batch of two documents, the first one uploaded: (tenant, batch, documents)."""
    with session_factory() as setup:
        tenant = tenants_service.create_tenant(setup, name="Starts", plan="free")
        batch = make_batch(setup, TenantContext(tenant_id=tenant.id, scopes=("*",)), count=2)
        ids = [d.id for d in batch.documents]
        _record(setup, tenant.id, ids[0])
        setup.commit()
    return tenant.id, batch.id, ids


def _record(session: Session, tenant_id: str, document_id: str) -> Document:
    stored = StoredObject(f"k/{document_id}", len(PDF), hashlib.sha256(PDF).hexdigest())
    return record_upload(
        session, tenant_id=tenant_id, document_id=document_id, stored=stored, detected_type="pdf"
    )


def _begin(writes: sessionmaker[Session], client: DBOSClient, batch_id: str) -> Started:
    with writes() as session, session.begin():
        return _started(begin_batch(session, client, batch_id=batch_id))


def _started(start: BatchStart) -> Started:
    assert isinstance(start, Started), start
    return start


def _in_thread(work: Callable[[], T]) -> tuple[threading.Thread, list[T]]:
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    return thread, result


def _wait_until_blocked(engine: Engine, thread: threading.Thread) -> None:
    """PostgreSQL: until another connection of this database waits for a lock (the thread's,
    on the transaction held open). SQLite serialises whole write transactions: the thread
    waits for the write lock at BEGIN, which needs no check."""
    if not on_postgres():
        return
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    deadline = time.monotonic() + 30
    with engine.connect() as conn:
        while not conn.execute(query).scalar_one():
            assert thread.is_alive() and time.monotonic() < deadline, "it never waited"
            time.sleep(0.01)


def _state(
    factory: sessionmaker[Session], tenant_id: str, batch_id: str, document_id: str
) -> tuple[tuple[int, int], tuple[str, str | None, str | None]]:
    with factory() as session:
        batch = BatchRepository(session, tenant_id).get(batch_id)
        document = DocumentRepository(session, tenant_id).get(document_id)
        assert batch is not None and document is not None
        return (
            (batch.uploaded_count, batch.failed_count),
            (document.status, document.error_code, document.storage_key),
        )


def test_an_upload_recorded_but_not_committed_when_the_batch_begins_is_processed(
    own_engine: Engine,
    writes: sessionmaker[Session],
    session_factory: sessionmaker[Session],
    batch_docs: tuple[str, str, list[str]],
    client: DBOSClient,
) -> None:
    tenant_id, batch_id, (first, last) = batch_docs
    with writes() as upload, upload.begin():
        _record(upload, tenant_id, last)
        # The batch begins (a start call's execution) while the upload is not yet committed.
        thread, started = _in_thread(lambda: _begin(writes, client, batch_id))
        _wait_until_blocked(own_engine, thread)
    thread.join(timeout=30)
    (start,) = started
    assert sorted(start.document_ids) == sorted([first, last])
    counts, document = _state(session_factory, tenant_id, batch_id, last)
    assert counts == (2, 0)
    assert document == ("UPLOADED", None, f"k/{last}")


def test_an_upload_recorded_while_the_batch_begins_is_refused(
    own_engine: Engine,
    writes: sessionmaker[Session],
    session_factory: sessionmaker[Session],
    batch_docs: tuple[str, str, list[str]],
    client: DBOSClient,
) -> None:
    tenant_id, batch_id, (first, last) = batch_docs
    with writes() as execution, execution.begin():
        start = _started(begin_batch(execution, client, batch_id=batch_id))
        thread, landed = _in_thread(lambda: _record_committed(writes, tenant_id, last))
        _wait_until_blocked(own_engine, thread)
    thread.join(timeout=30)
    assert start.document_ids == (first,)
    (answer,) = landed
    assert answer == ("FAILED", "not_uploaded", None)
    counts, document = _state(session_factory, tenant_id, batch_id, last)
    assert counts == (1, 1)
    assert document == ("FAILED", "not_uploaded", None)


def _record_committed(
    writes: sessionmaker[Session], tenant_id: str, document_id: str
) -> tuple[str, str | None, str | None]:
    with writes() as session, session.begin():
        document = _record(session, tenant_id, document_id)
        return document.status, document.error_code, document.storage_key


def test_bytes_still_arriving_when_the_batch_begins_are_discarded(
    tmp_path: Path,
    writes: sessionmaker[Session],
    session_factory: sessionmaker[Session],
    batch_docs: tuple[str, str, list[str]],
    client: DBOSClient,
) -> None:
    tenant_id, batch_id, (first, last) = batch_docs
    storage = LocalStorage(tmp_path / "files")
    grant = UploadGrant(tenant_id, last, "application/pdf", 10_000, 2**40)
    begun: list[Started] = []

    def body() -> Iterator[bytes]:
        yield PDF[:50]
        begun.append(_begin(writes, client, batch_id))  # the start's execution, committed meanwhile
        yield PDF[50:]

    with writes() as upload, upload.begin():
        answer = receive_upload(upload, storage, grant=grant, chunks=body())
    assert begun[0].document_ids == (first,)
    assert (answer.status, answer.error_code, answer.storage_key) == (
        "FAILED",
        "not_uploaded",
        None,
    )
    assert not [p for p in storage.root.rglob("*") if p.is_file()]  # its bytes were removed
    counts, _ = _state(session_factory, tenant_id, batch_id, last)
    assert counts == (1, 1)
