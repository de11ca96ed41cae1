"""Landing an uploaded file: store it, then record the document as UPLOADED, at most once.

Ingestion is at-least-once on the wire and exactly-once in the database. Each delivery streams to
its own object key (`tenants/{t}/documents/{d}/upload-{delivery}`), and a compare-and-set on the
document's version picks the one delivery that is recorded: so the recorded size and SHA-256
always describe the bytes under the recorded `storage_key`, even when two different deliveries
of one document race. A delivery that loses removes its own object, as does a delivery for a
document no longer waiting for its file (already uploaded, processing, failed for lateness).

A crash, or a rollback of the caller's transaction, between storing and committing leaves an
object no document points to; it is never read, and the document stays PENDING_UPLOAD so the
client may upload again. The file is stored before the database is read, so (unless the caller
opened a transaction earlier) no connection sits idle in a transaction while a client uploads.
"""

from __future__ import annotations

from collections.abc import Iterator

import structlog
from sqlalchemy.orm import Session

from docflow.batches.models import Batch, BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.documents.models import Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.documents.upload_urls import UploadGrant
from docflow.errors import NotFound
from docflow.extraction.sniff import sniff
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.storage.base import ByteSource, Storage, StoredObject, iter_chunks, object_key

log = structlog.get_logger(__name__)

# sniff() looks for a PDF header anywhere in the first kilobyte.
SNIFF_BYTES = 1024


def document_key(tenant_id: str, document_id: str, name: str = "original") -> str:
    """The object key of a file of a document: `tenants/{t}/documents/{d}/{name}`.

    `original` is the key a client uploads to directly in S3 mode (presigned PUT).
    """
    return object_key(tenant_id, "documents", document_id, name)


def receive_upload(
    session: Session, storage: Storage, *, grant: UploadGrant, chunks: ByteSource
) -> Document:
    """Store the file an upload URL grants and record its document as UPLOADED, once.

    Streams `chunks` to storage (never whole in memory) under `grant.max_bytes`, computing the
    SHA-256 and the detected type on the way (`detected_type` is the `DocumentKind` value found
    by magic numbers in the first bytes, None when unrecognised), then records them with
    `uploaded_at` through `record_upload`, in the caller's transaction.

    The database is touched only after the file is stored, so no transaction stays open while a
    client sends its file. A delivery for a document that is not PENDING_UPLOAD (a second
    delivery, or one after the document failed) leaves the document as it is and removes the
    bytes it stored: a no-op returning the document. Raises `TooLarge` past the limit (nothing
    stored, document unchanged) and `NotFound` for an unknown document.
    """
    head = bytearray()
    key = document_key(grant.tenant_id, grant.document_id, f"upload-{ids.ulid()}")
    stored = storage.write_stream(key, _tee_head(chunks, head), max_bytes=grant.max_bytes)
    kind = sniff(bytes(head))
    try:
        document = record_upload(
            session,
            tenant_id=grant.tenant_id,
            document_id=grant.document_id,
            stored=stored,
            detected_type=kind.value if kind else None,
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
    conditional UPDATE, which also bumps its version) and adds one to its batch's
    `uploaded_count`; otherwise changes nothing, so a repeated or late notification is
    harmless. The caller commits. Raises `NotFound` for an unknown document.

    The batch row is locked first (`BatchRepository.lock`), as the batch's execution locks it
    when it begins: an upload recorded before is processed, one arriving after finds the batch
    begun and its document FAILED `not_uploaded` (see `batches.execution.begin_batch`).
    """
    waiting = _load(session, tenant_id, document_id, fresh=True)
    if waiting.status != DocumentStatus.PENDING_UPLOAD:
        return waiting
    batch = BatchRepository(session, tenant_id).lock(waiting.batch_id)
    if batch is None or batch.status != BatchStatus.CREATED:
        return _load(session, tenant_id, document_id, fresh=True)
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
        return _load(session, tenant_id, document_id, fresh=True)
    _count_upload(session, tenant_id, document.batch_id)
    log.info(
        "document.uploaded",
        tenant_id=tenant_id,
        document_id=document_id,
        size=stored.size,
        detected_type=detected_type,
    )
    return document


def _count_upload(session: Session, tenant_id: str, batch_id: str) -> None:
    BatchRepository(session, tenant_id).increment(batch_id, Batch.uploaded_count, now=utcnow())


def _load(session: Session, tenant_id: str, document_id: str, *, fresh: bool = False) -> Document:
    document = DocumentRepository(session, tenant_id).get(document_id, fresh=fresh)
    if document is None:
        raise NotFound("document not found")
    return document


def _tee_head(chunks: ByteSource, head: bytearray) -> Iterator[bytes]:
    """Pass `chunks` through, copying their first SNIFF_BYTES bytes into `head`."""
    for chunk in iter_chunks(chunks):
        if len(head) < SNIFF_BYTES:
            head += chunk[: SNIFF_BYTES - len(head)]
        yield chunk
