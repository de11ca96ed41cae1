"""Uploads through the real database and real storage: a file stored once and recorded once,
and a new upload URL for a file still awaited."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches.models import Batch
from docflow.documents.models import Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import document_key
from docflow.documents.uploads.service import (
    UploadNotReissued,
    receive_upload,
    record_upload,
    reissue_upload,
)
from docflow.documents.uploads.urls import UploadGrant, UploadTarget, verify_upload
from docflow.errors import NotFound
from docflow.kit.clock import utcnow
from docflow.storage.base import StoredObject, TooLarge
from docflow.storage.local import LocalStorage
from docflow.storage.s3 import S3Storage
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants_service
from support.db_fixtures import make_batch, on_postgres
from support.s3_server import S3Server, s3_server  # noqa: F401

PDF = b"%PDF-1.7\n" + b"1 0 obj << >> endobj\n" * 200 + b"%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def grant_for(document: Document, max_bytes: int = 10_000) -> UploadGrant:
    return UploadGrant(
        tenant_id=document.tenant_id,
        document_id=document.id,
        content_type=document.content_type,
        max_bytes=max_bytes,
        expires_at=2**40,
    )


def chunked(data: bytes, size: int = 100) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def files_under(storage: LocalStorage) -> list[Path]:
    if not storage.root.exists():
        return []
    return sorted(p for p in storage.root.rglob("*") if p.is_file())


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "files")


def test_an_upload_is_stored_and_recorded(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = make_batch(session, tenant_a)
    target = batch.documents[0]
    before = utcnow()
    document = receive_upload(session, storage, grant=grant_for(target), chunks=chunked(PDF))
    assert document.status == DocumentStatus.UPLOADED
    assert (document.size, document.sha256) == (len(PDF), hashlib.sha256(PDF).hexdigest())
    assert document.detected_type == "pdf"
    assert document.uploaded_at is not None and document.uploaded_at >= before
    assert document.storage_key is not None
    assert document.storage_key.startswith(document_key(tenant_a.tenant_id, target.id, "upload-"))
    assert storage.read_bytes(document.storage_key, max_bytes=len(PDF)) == PDF
    session.refresh(batch)
    assert batch.uploaded_count == 1


def test_a_second_delivery_is_a_no_op(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = make_batch(session, tenant_a)
    grant = grant_for(batch.documents[0])
    first = receive_upload(session, storage, grant=grant, chunks=chunked(PDF))
    recorded = (first.storage_key, first.sha256, first.uploaded_at, first.version)
    again = receive_upload(session, storage, grant=grant, chunks=[PNG])
    assert again.id == first.id
    assert (again.storage_key, again.sha256, again.uploaded_at, again.version) == recorded
    assert again.detected_type == "pdf"
    assert first.storage_key is not None
    assert files_under(storage) == [storage.root.joinpath(*first.storage_key.split("/"))]
    session.refresh(batch)
    assert batch.uploaded_count == 1


def test_every_document_is_counted_once(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = make_batch(session, tenant_a, count=3)
    for document in batch.documents:
        for _ in range(2):
            receive_upload(session, storage, grant=grant_for(document), chunks=[PDF])
    session.refresh(batch)
    assert batch.uploaded_count == batch.document_count == 3


def test_an_oversize_upload_is_refused_and_leaves_nothing(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = make_batch(session, tenant_a)
    target = batch.documents[0]
    with pytest.raises(TooLarge):
        receive_upload(
            session, storage, grant=grant_for(target, max_bytes=len(PDF) - 1), chunks=[PDF]
        )
    document = DocumentRepository(session, tenant_a.tenant_id).get(target.id)
    assert document is not None
    assert (document.status, document.storage_key, document.size) == ("PENDING_UPLOAD", None, None)
    assert files_under(storage) == []
    session.refresh(batch)
    assert batch.uploaded_count == 0
    # The refusal does not burn the grant: a file within the limit is accepted afterwards.
    accepted = receive_upload(session, storage, grant=grant_for(target), chunks=[PDF])
    assert accepted.status == DocumentStatus.UPLOADED


@pytest.mark.parametrize(
    ("body", "chunk_size", "detected"),
    [
        (PNG, 1, "png"),  # declared application/pdf: the bytes decide
        (b"junk\r\n" + PDF, 3, "pdf"),  # header a few bytes in, split across chunks
        (b"\xff\xd8\xff\xe0" + b"\0" * 50, 7, "jpeg"),
        (b"plain text renamed .jpg", 5, None),
        (b"", 1, None),
    ],
)
def test_the_type_comes_from_the_bytes(
    session: Session,
    tenant_a: TenantContext,
    storage: LocalStorage,
    body: bytes,
    chunk_size: int,
    detected: str | None,
) -> None:
    target = make_batch(session, tenant_a).documents[0]
    document = receive_upload(
        session, storage, grant=grant_for(target), chunks=chunked(body, chunk_size)
    )
    assert (document.detected_type, document.size) == (detected, len(body))


def test_a_grant_for_a_missing_or_foreign_document_is_not_found(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext, storage: LocalStorage
) -> None:
    target = make_batch(session, tenant_a).documents[0]
    foreign = UploadGrant(tenant_b.tenant_id, target.id, "application/pdf", 10_000, 2**40)
    missing = UploadGrant(tenant_a.tenant_id, "doc_missing", "application/pdf", 10_000, 2**40)
    for grant in (foreign, missing):
        with pytest.raises(NotFound):
            receive_upload(session, storage, grant=grant, chunks=[PDF])
    assert files_under(storage) == []


def test_a_document_past_waiting_ignores_its_upload(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = make_batch(session, tenant_a)
    target = batch.documents[0]
    repo = DocumentRepository(session, tenant_a.tenant_id)
    assert repo.compare_and_set(
        target.id, expected_version=target.version, status="FAILED", error_code="upload_expired"
    )
    session.refresh(target)
    document = receive_upload(session, storage, grant=grant_for(target), chunks=[PDF])
    assert (document.status, document.storage_key) == ("FAILED", None)
    assert files_under(storage) == []
    session.refresh(batch)
    assert batch.uploaded_count == 0


def test_a_delivery_losing_a_race_removes_its_own_object(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    batch = make_batch(session, tenant_a)
    target = batch.documents[0]
    winner_key = document_key(tenant_a.tenant_id, target.id, "upload-winner")
    winner = storage.write_bytes(winner_key, PNG)

    def body_while_another_delivery_lands() -> Iterator[bytes]:
        yield PDF[:100]
        # Another delivery of the same document is recorded while this one still streams.
        record_upload(
            session,
            tenant_id=tenant_a.tenant_id,
            document_id=target.id,
            stored=winner,
            detected_type="png",
        )
        yield PDF[100:]

    document = receive_upload(
        session, storage, grant=grant_for(target), chunks=body_while_another_delivery_lands()
    )
    assert (document.storage_key, document.sha256) == (winner_key, winner.sha256)
    assert document.detected_type == "png"
    assert [p.name for p in files_under(storage)] == ["upload-winner"]
    session.refresh(batch)
    assert batch.uploaded_count == 1


def test_record_upload_is_idempotent(session: Session, tenant_a: TenantContext) -> None:
    batch = make_batch(session, tenant_a)
    target = batch.documents[0]
    key = document_key(tenant_a.tenant_id, target.id)
    stored = StoredObject(key=key, size=3, sha256=hashlib.sha256(b"abc").hexdigest())
    other = StoredObject(key=key + "-other", size=4, sha256=hashlib.sha256(b"abcd").hexdigest())
    first = record_upload(
        session,
        tenant_id=tenant_a.tenant_id,
        document_id=target.id,
        stored=stored,
        detected_type=None,
    )
    again = record_upload(
        session,
        tenant_id=tenant_a.tenant_id,
        document_id=target.id,
        stored=other,
        detected_type="pdf",
    )
    assert (again.storage_key, again.size, again.version) == (key, 3, first.version)
    session.refresh(batch)
    assert batch.uploaded_count == 1


def test_an_upload_lands_in_s3(
    session: Session,
    tenant_a: TenantContext,
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    storage = S3Storage.from_url(f"s3://ingest?endpoint_url={s3_server.endpoint_url}")
    storage.client.create_bucket(Bucket="ingest")
    target = make_batch(session, tenant_a).documents[0]
    document = receive_upload(session, storage, grant=grant_for(target), chunks=chunked(PDF))
    assert document.storage_key is not None
    info = storage.head(document.storage_key)
    assert info is not None
    assert (info.size, info.sha256) == (len(PDF), document.sha256)


def test_concurrent_deliveries_record_one_upload(
    session_factory: sessionmaker[Session], storage: LocalStorage
) -> None:
    with session_factory() as setup:
        tenant = tenants_service.create_tenant(setup, name="Concurrent", plan="free")
        context = TenantContext(tenant_id=tenant.id, scopes=("*",))
        batch = make_batch(setup, context, count=1)
        target = batch.documents[0]
        setup.commit()
    grant = grant_for(target)
    start = threading.Barrier(4)
    outcomes: list[str] = []

    def deliver(body: bytes) -> None:
        def chunks() -> Iterator[bytes]:
            start.wait(timeout=10)
            yield from chunked(body)

        with session_factory() as own:
            try:
                receive_upload(own, storage, grant=grant, chunks=chunks())
                own.commit()
                outcomes.append("ok")
            except OperationalError:
                # SQLite (deferred BEGIN) refuses to upgrade a read transaction whose snapshot
                # another writer made stale ("database is locked"); the client retries.
                own.rollback()
                outcomes.append("retry")

    bodies = [PDF, PNG, PDF, PNG]
    threads = [threading.Thread(target=deliver, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert "ok" in outcomes and len(outcomes) == 4
    if on_postgres():
        assert outcomes == ["ok"] * 4
    with session_factory() as check:
        document = DocumentRepository(check, tenant.id).get(target.id)
        assert document is not None and document.storage_key is not None
        stored = storage.read_bytes(document.storage_key, max_bytes=10_000)
        assert hashlib.sha256(stored).hexdigest() == document.sha256
        assert files_under(storage) == [storage.root.joinpath(*document.storage_key.split("/"))]
        counted = check.get(Batch, (tenant.id, batch.id))
        assert counted is not None and counted.uploaded_count == 1


SECRET = "a-test-signing-secret-of-decent-length"
BASE_URL = "https://docflow.test"


def _reissue(
    session: Session, tenant: TenantContext, document_id: str, now: datetime, ttl: int = 600
) -> tuple[Document, UploadTarget]:
    return reissue_upload(
        session,
        tenant,
        None,
        document_id=document_id,
        secret=SECRET,
        base_url=BASE_URL,
        ttl_seconds=ttl,
        now=now,
    )


def test_a_document_awaiting_its_file_gets_a_fresh_signed_url(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    batch = make_batch(session, tenant_a, 1)
    target_document = batch.documents[0]
    now = utcnow()
    document, target = _reissue(session, tenant_a, target_document.id, now)
    assert document.id == target_document.id
    assert (target.method, target.headers) == ("PUT", {"Content-Type": "application/pdf"})
    assert target.url.startswith(f"{BASE_URL}/v1/uploads/")
    grant = verify_upload(SECRET, target.url.rsplit("/", 1)[1], now=int(now.timestamp()))
    assert (grant.tenant_id, grant.document_id, grant.content_type, grant.max_bytes) == (
        tenant_a.tenant_id,
        target_document.id,
        "application/pdf",
        10,
    )
    assert grant.expires_at == int(target.expires_at.timestamp())
    assert now + timedelta(seconds=599) <= target.expires_at <= now + timedelta(seconds=600)
    # Never valid past the batch's upload deadline (an hour away here).
    _, capped = _reissue(session, tenant_a, target_document.id, now, ttl=7200)
    assert capped.expires_at <= batch.upload_deadline
    assert capped.expires_at > batch.upload_deadline - timedelta(seconds=2)
    with pytest.raises(NotFound):
        _reissue(session, tenant_b, target_document.id, now)


def test_no_new_url_once_uploaded_started_or_past_the_deadline(
    session: Session, tenant_a: TenantContext
) -> None:
    batch = make_batch(session, tenant_a, 3)
    uploaded, waiting, _ = (d.id for d in batch.documents)
    repo = DocumentRepository(session, tenant_a.tenant_id)
    assert repo.compare_and_set(
        uploaded, expected_version=1, status="UPLOADED", uploaded_at=utcnow()
    )
    with pytest.raises(UploadNotReissued) as refused:
        _reissue(session, tenant_a, uploaded, utcnow())
    assert (refused.value.status, refused.value.code) == (409, "document_already_uploaded")
    with pytest.raises(UploadNotReissued) as refused:
        _reissue(session, tenant_a, waiting, batch.upload_deadline)
    assert refused.value.code == "upload_deadline_passed"
    assert refused.value.extra == {"upload_deadline": batch.upload_deadline}
    batch.status = "PROCESSING"
    session.flush()
    with pytest.raises(UploadNotReissued) as refused:
        _reissue(session, tenant_a, waiting, utcnow())
    assert refused.value.code == "batch_started"
