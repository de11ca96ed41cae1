"""Uploads, the use cases: record a landed file once, start its batch when it was the last one,
and hand out a fresh upload URL while a file is still awaited.

A file lands in one of three ways, and is recorded one way (`record_upload`):
- `land_upload`: `PUT /v1/uploads/{token}` (local storage). The bytes are received first
  (`receive.store_delivery`), then recorded and the batch triggered in one write transaction.
- `confirm_direct_upload`: `POST /v1/documents/{id}/uploaded` (S3, after a presigned POST). The
  object is checked (HEAD), copied to a key of its own and read back once, then recorded and
  the batch triggered.
- `reconcile_uploads`: the every-minute schedule (S3) confirms files posted without a
  confirmation.

`submit_file` is a whole submission of one file the server already holds (a sample uploaded in
the console): a batch of one document, recorded and charged as `POST /v1/batches` records it,
then its file landed as a `PUT` lands it.

Ingestion is at-least-once on the wire and exactly-once in the database. Recording is a
compare-and-set on the document, so the recorded size and SHA-256 always describe the bytes under
the recorded `storage_key`, even when two deliveries of one document race; a delivery that loses
removes its own object, as does one for a document no longer waiting for its file (already
uploaded, processing, failed for lateness). A crash, or a rollback of the transaction, between
storing and committing leaves an object no document points to; it is never read, and the
document stays PENDING_UPLOAD so the client may upload again.
"""

from __future__ import annotations

import mimetypes
from datetime import UTC, datetime, timedelta
from typing import IO, Any

import structlog
from dbos import DBOSClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches import triggers
from docflow.batches.models import BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.batches.service import DocumentSpec, create_batch, due_batches
from docflow.config import Settings
from docflow.documents.models import Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import document_key, get_document
from docflow.documents.uploads import receive
from docflow.documents.uploads.urls import UploadGrant, UploadTarget, upload_target
from docflow.errors import Conflict, DomainError, InvalidInput, get_one
from docflow.kit.clock import utcnow
from docflow.quotas import service as quotas
from docflow.storage.base import ByteSource, ObjectNotFound, Storage, StoredObject, TooLarge
from docflow.storage.local import LocalStorage
from docflow.storage.sealed import unwrap_storage
from docflow.tenancy import TenantContext
from docflow.tenants import status as tenant_status

log = structlog.get_logger(__name__)

# Far enough ahead that every waiting batch counts as "due": the waiting-batches lookup.
_END_OF_TIME = datetime(9999, 12, 31, tzinfo=UTC)


def land_upload(
    write_factory: sessionmaker[Session],
    storage: Storage,
    client: DBOSClient,
    *,
    grant: UploadGrant,
    body: IO[bytes],
) -> Document:
    """Store `body` for the granted document, record it, and start its batch if it was the
    last to land; all database work in one write transaction."""
    with write_factory() as session, session.begin():
        document = receive_upload(session, storage, grant=grant, chunks=body)
        triggers.start_if_ready(
            session, client, tenant_id=grant.tenant_id, batch_id=document.batch_id, now=utcnow()
        )
        return document


def submit_file(
    write_factory: sessionmaker[Session],
    storage: Storage,
    client: DBOSClient,
    settings: Settings,
    tenant: TenantContext,
    *,
    project_id: str,
    workflow_id: str,
    name: str,
    content_type: str | None,
    body: IO[bytes],
) -> str:
    """Submit `body` (a seekable file) as a batch of one document of the workflow: the batch is
    recorded and charged to the tenant's quotas in one write transaction, then the file lands
    through `land_upload`, which starts the batch. The document's id. An empty file is refused
    (InvalidInput on `file`), one over the size limit or past a quota as a batch creation is."""
    size = body.seek(0, 2)
    body.seek(0)
    if size == 0:
        raise InvalidInput("the file is empty", field="file")
    declared = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    deadline = utcnow() + timedelta(seconds=settings.upload_deadline_seconds)
    with write_factory() as session, session.begin():
        tenant_status.require_active(session, tenant.tenant_id)
        plan = settings.plan(quotas.plan_name(session, tenant.tenant_id))
        batch = create_batch(
            session,
            tenant,
            project_id=project_id,
            workflow_id=workflow_id,
            documents=[DocumentSpec(name=name[-255:], content_type=declared, size=size)],
            scheduled_for=None,
            upload_deadline=deadline,
            max_documents=quotas.max_batch_documents(settings, plan),
            max_document_bytes=settings.max_document_bytes,
        )
        quotas.charge_batch(session, tenant, documents=batch.document_count, plan=plan)
        document_id = batch.documents[0].id
    grant = UploadGrant(
        tenant_id=tenant.tenant_id,
        document_id=document_id,
        content_type=declared,
        max_bytes=settings.max_document_bytes,
        expires_at=int(deadline.timestamp()),
    )
    land_upload(write_factory, storage, client, grant=grant, body=body)
    return document_id


def receive_upload(
    session: Session, storage: Storage, *, grant: UploadGrant, chunks: ByteSource
) -> Document:
    """Store the file an upload URL grants and record its document as UPLOADED, once.

    Streams `chunks` to storage under `grant.max_bytes` (`receive.store_delivery`), then records
    the file through `record_upload`, in the caller's transaction. The database is touched only
    after the file is stored, so no transaction stays open while a client sends its file. A
    delivery for a document that is not PENDING_UPLOAD (a second delivery, or one after the
    document failed) leaves the document as it is and removes the bytes it stored: a no-op
    returning the document. Raises `TooLarge` past the limit (nothing stored, document
    unchanged) and `NotFound` for an unknown document.
    """
    received = receive.store_delivery(
        storage,
        tenant_id=grant.tenant_id,
        document_id=grant.document_id,
        chunks=chunks,
        max_bytes=grant.max_bytes,
    )
    key = received.stored.key
    try:
        document = record_upload(
            session,
            tenant_id=grant.tenant_id,
            document_id=grant.document_id,
            stored=received.stored,
            detected_type=received.detected_type,
        )
    except BaseException:
        storage.delete(key)
        raise
    if document.storage_key != key:
        storage.delete(key)
        log.info("document.upload_ignored", document_id=document.id, status=document.status)
    return document


def record_upload(
    session: Session,
    *,
    tenant_id: str,
    document_id: str,
    stored: StoredObject,
    detected_type: str | None,
) -> Document:
    """Record a stored file as the document's upload, once; return the document as it now is.

    When the document is still PENDING_UPLOAD and its batch has not begun, sets status
    UPLOADED, `storage_key`, `size`, `sha256`, `detected_type` and `uploaded_at` (one
    conditional UPDATE, which also bumps its version) and counts the upload in its batch;
    otherwise changes nothing, so a repeated or late notification is harmless. The caller
    commits. Raises `NotFound` for an unknown document, `TenantSuspended` (403) while its
    tenant is suspended.

    The batch is held first (`triggers.hold_for_upload` locks its row), as the batch's
    execution locks it when it begins: an upload recorded before is processed, one arriving
    after finds the batch begun and its document FAILED `not_uploaded`.
    """
    waiting = _load(session, tenant_id, document_id)
    if waiting.status == DocumentStatus.CANCELLED:
        raise BatchCancelled("the document's batch was cancelled: it takes no more uploads")
    tenant_status.require_active(session, tenant_id)
    if waiting.status != DocumentStatus.PENDING_UPLOAD:
        return waiting
    if not triggers.hold_for_upload(session, tenant_id=tenant_id, batch_id=waiting.batch_id):
        return _load(session, tenant_id, document_id)
    now = utcnow()
    document = DocumentRepository(session, tenant_id).mark_uploaded(
        document_id,
        storage_key=stored.key,
        size=stored.size,
        sha256=stored.sha256,
        detected_type=detected_type,
        now=now,
    )
    if document is None:  # another delivery of it was recorded meanwhile
        return _load(session, tenant_id, document_id)
    triggers.count_upload(session, tenant_id=tenant_id, batch_id=document.batch_id, now=now)
    log.info(
        "document.uploaded",
        tenant_id=tenant_id,
        document_id=document_id,
        size=stored.size,
        detected_type=detected_type,
    )
    return document


def confirm_direct_upload(
    write_factory: sessionmaker[Session],
    storage: Storage,
    client: DBOSClient,
    tenant: TenantContext,
    *,
    document_id: str,
) -> Document:
    """S3 mode: the client says it POSTed the file to its presigned form. Check the object at
    the incoming key (HEAD: exactly the declared size), take it (`receive.take_incoming`: a
    copy to a key of its own, read once for its SHA-256 and type), record it and maybe start
    the batch; the incoming object is then removed. Conflict when nothing is stored yet;
    `TooLarge` (413) or `SizeMismatch` (422) when the object is not of the declared size, and
    it is removed. A document already landed is returned unchanged, and whatever was posted
    again since is removed."""
    incoming = document_key(tenant.tenant_id, document_id)
    with write_factory() as session:
        document = _load(session, tenant.tenant_id, document_id)
        # Before the object is read back: the schedule confirms a suspended tenant's files too.
        tenant_status.require_active(session, tenant.tenant_id)
        declared = document.declared_size
    if document.status == DocumentStatus.CANCELLED:
        storage.delete(incoming)
        raise BatchCancelled("the document's batch was cancelled: it takes no more uploads")
    if document.status != DocumentStatus.PENDING_UPLOAD:
        # Landed already (through either path) or failed: a repeated confirmation is a no-op.
        if document.storage_key != incoming:
            storage.delete(incoming)
        return document
    # The client's bytes as posted (never sealed), whatever they begin with.
    info = unwrap_storage(storage).head(incoming)
    if info is None:
        raise Conflict("no file has been uploaded for this document yet")
    _check_size(storage, incoming, declared=declared, size=info.size)
    try:
        received = receive.take_incoming(
            storage, incoming, tenant_id=tenant.tenant_id, document_id=document_id
        )
    except ObjectNotFound:  # another confirmation took it first
        with write_factory() as session:
            document = _load(session, tenant.tenant_id, document_id)
        if document.status == DocumentStatus.PENDING_UPLOAD:
            raise Conflict("no file has been uploaded for this document yet") from None
        return document
    document = _record_taken(
        write_factory,
        storage,
        client,
        tenant,
        document_id=document_id,
        received=received,
        declared=declared,
    )
    storage.delete(incoming)
    return document


def _record_taken(
    write_factory: sessionmaker[Session],
    storage: Storage,
    client: DBOSClient,
    tenant: TenantContext,
    *,
    document_id: str,
    received: receive.Received,
    declared: int,
) -> Document:
    """Record a file taken from the incoming key (its copy, which no client can write to) and
    maybe start the batch; the copy is removed unless it became the document's file."""
    key = received.stored.key
    try:
        _check_size(storage, key, declared=declared, size=received.stored.size)
        with write_factory() as session, session.begin():
            document = record_upload(
                session,
                tenant_id=tenant.tenant_id,
                document_id=document_id,
                stored=received.stored,
                detected_type=received.detected_type,
            )
            triggers.start_if_ready(
                session,
                client,
                tenant_id=tenant.tenant_id,
                batch_id=document.batch_id,
                now=utcnow(),
            )
    except BaseException:
        storage.delete(key)
        raise
    if document.storage_key != key:
        storage.delete(key)
    return document


class SizeMismatch(InvalidInput):
    """The stored file is smaller than the size declared for it."""

    code = "file_size_mismatch"


def _check_size(storage: Storage, key: str, *, declared: int, size: int) -> None:
    """Remove the object under `key` and refuse it unless it is exactly `declared` bytes."""
    if size == declared:
        return
    storage.delete(key)
    if size > declared:
        raise TooLarge(declared)
    raise SizeMismatch(
        f"the file is {size} bytes, but {declared} were declared for it",
        declared_size=declared,
        size=size,
    )


def reconcile_uploads(
    write_factory: sessionmaker[Session],
    storage: Storage,
    client: DBOSClient,
    *,
    batch_limit: int = 200,
) -> int:
    """S3 mode: record files that clients POSTed to their presigned forms without confirming.

    For the documents still waiting in the oldest `batch_limit` waiting batches, HEAD the
    object each may have been uploaded to and, when one is there, confirm it as the client
    would have (`confirm_direct_upload`: recorded once, batch started when it completes).
    Local storage has nothing to reconcile (uploads go through the API). Returns how many
    documents were recorded.
    """
    if isinstance(unwrap_storage(storage), LocalStorage):
        return 0
    with write_factory() as session:
        waiting = due_batches(session, now=_END_OF_TIME, limit=batch_limit)
        pending = [
            (tenant, d.id)
            for tenant, batch_id in waiting
            for d in DocumentRepository(session, tenant.tenant_id).in_batch(batch_id)
            if d.status == DocumentStatus.PENDING_UPLOAD
        ]
    recorded = 0
    for tenant, document_id in pending:
        if storage.head(document_key(tenant.tenant_id, document_id)) is None:
            continue
        try:
            confirm_direct_upload(write_factory, storage, client, tenant, document_id=document_id)
            recorded += 1
        except DomainError as exc:  # too large (removed), or gone meanwhile: the next pass sees
            log.info("document.reconcile_refused", document_id=document_id, code=exc.code)
    return recorded


def _load(session: Session, tenant_id: str, document_id: str) -> Document:
    """The document read afresh (a compare-and-set does not refresh loaded objects)."""
    return get_one(DocumentRepository(session, tenant_id).get(document_id, fresh=True), "document")


class BatchCancelled(Conflict):
    """An upload for a document of a cancelled batch: refused, and the bytes removed."""

    code = "batch_cancelled"


class UploadNotReissued(Conflict):
    """No new upload URL: the document's file landed, its batch started, or its deadline passed.

    `code` says which: `document_already_uploaded`, `batch_started`, `batch_cancelled`,
    `upload_deadline_passed`.
    """

    def __init__(self, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.code = code


def reissue_upload(
    session: Session,
    tenant: TenantContext,
    storage: Storage | None,
    *,
    document_id: str,
    secret: str,
    base_url: str,
    ttl_seconds: int,
    now: datetime,
) -> tuple[Document, UploadTarget]:
    """A fresh upload target (see `urls.upload_target`) for one of the tenant's documents still
    awaiting its file, in a batch not started whose upload deadline is after `now`. Earlier
    targets stay valid until they expire. NotFound for a missing id or another tenant's;
    `UploadNotReissued` (409) otherwise."""
    document = get_document(session, tenant, document_id=document_id)
    # The document was read under this tenant: its batch is there too.
    batch = get_one(BatchRepository(session, tenant.tenant_id).get(document.batch_id), "document")
    if document.uploaded_at is not None:
        raise UploadNotReissued(
            "document_already_uploaded", "the document's file was already uploaded"
        )
    if batch.status == BatchStatus.CANCELLED:
        raise UploadNotReissued("batch_cancelled", "the document's batch was cancelled")
    if batch.status != BatchStatus.CREATED or document.status != DocumentStatus.PENDING_UPLOAD:
        raise UploadNotReissued(
            "batch_started", "the document's batch has started: it takes no more uploads"
        )
    if batch.upload_deadline <= now:
        raise UploadNotReissued(
            "upload_deadline_passed",
            "the batch's upload deadline has passed",
            upload_deadline=batch.upload_deadline,
        )
    target = upload_target(
        document,
        storage=storage,
        secret=secret,
        base_url=base_url,
        ttl_seconds=ttl_seconds,
        deadline=batch.upload_deadline,
        now=now,
    )
    log.info("document.upload_url_issued", tenant_id=tenant.tenant_id, document_id=document.id)
    return document, target
