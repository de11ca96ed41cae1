"""Landing an upload and starting the batch when it was the last one, in one transaction.

Used by `PUT /v1/uploads/{token}` (local mode) and `POST /v1/documents/{id}/uploaded` (S3 mode,
after a presigned PUT). The file is stored (or checked) before any transaction opens; the
transaction then records the upload (compare-and-set, a second delivery is a no-op) and, if
every document of the batch has now landed, enqueues the batch's execution with it.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import IO

import structlog
from dbos import DBOSClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches import triggers
from docflow.batches.service import due_batches
from docflow.documents import ingest
from docflow.documents.models import Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.documents.upload_urls import UploadGrant
from docflow.errors import Conflict, DomainError, NotFound
from docflow.extraction.sniff import sniff
from docflow.kit.clock import utcnow
from docflow.storage.base import CHUNK_SIZE, Storage, StoredObject, TooLarge
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

# Bodies up to this size stay in memory while they arrive; larger ones spill to a temp file.
_SPOOL_MEMORY = 1024 * 1024


async def spool_body(chunks: AsyncIterator[bytes], *, max_bytes: int) -> IO[bytes]:
    """Receive a request body into a temp file (memory up to 1 MB), refusing it with
    `TooLarge` as soon as it passes `max_bytes`; the caller closes the file."""
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY)  # noqa: SIM115
    size = 0
    try:
        async for chunk in chunks:
            size += len(chunk)
            if size > max_bytes:
                raise TooLarge(max_bytes)
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


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
        document = ingest.receive_upload(session, storage, grant=grant, chunks=body)
        triggers.start_if_ready(
            session, client, tenant_id=grant.tenant_id, batch_id=document.batch_id, now=utcnow()
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
    """S3 mode: the client says it PUT the file to its presigned URL. Check the object (HEAD),
    read it once for its SHA-256 and type, record it and maybe start the batch. Conflict when
    nothing is stored yet; a document already landed is returned unchanged."""
    with write_factory() as session:
        document = DocumentRepository(session, tenant.tenant_id).get(document_id)
        if document is None:
            raise NotFound("document not found")
        if document.status != DocumentStatus.PENDING_UPLOAD:
            # Landed already (through either path) or failed: a repeated confirmation is a no-op.
            return document
        key = ingest.document_key(tenant.tenant_id, document_id)
        declared = document.declared_size
    info = storage.head(key)
    if info is None:
        raise Conflict("no file has been uploaded for this document yet")
    if info.size > declared:
        storage.delete(key)
        raise TooLarge(declared)
    stored, head = _digest(storage, key, info.size)
    kind = sniff(head)
    with write_factory() as session, session.begin():
        document = ingest.record_upload(
            session,
            tenant_id=tenant.tenant_id,
            document_id=document_id,
            stored=stored,
            detected_type=kind.value if kind else None,
        )
        triggers.start_if_ready(
            session, client, tenant_id=tenant.tenant_id, batch_id=document.batch_id, now=utcnow()
        )
        return document


def _digest(storage: Storage, key: str, size: int) -> tuple[StoredObject, bytes]:
    sha = hashlib.sha256()
    head = b""
    with storage.open_read(key) as stream:
        while chunk := stream.read(CHUNK_SIZE):
            if len(head) < ingest.SNIFF_BYTES:
                head += chunk[: ingest.SNIFF_BYTES - len(head)]
            sha.update(chunk)
    return StoredObject(key=key, size=size, sha256=sha.hexdigest()), head


# Far enough ahead that every waiting batch counts as "due": the waiting-batches lookup.
_END_OF_TIME = datetime(9999, 12, 31, tzinfo=UTC)


def reconcile_uploads(
    write_factory: sessionmaker[Session],
    storage: Storage,
    client: DBOSClient,
    *,
    batch_limit: int = 200,
) -> int:
    """S3 mode: record files that clients PUT to their presigned URLs without confirming.

    For the documents still waiting in the oldest `batch_limit` waiting batches, HEAD the
    object each may have been uploaded to and, when one is there, confirm it as the client
    would have (`confirm_direct_upload`: recorded once, batch started when it completes).
    Local storage has nothing to reconcile (uploads go through the API). Returns how many
    documents were recorded.
    """
    if isinstance(storage, LocalStorage):
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
        if storage.head(ingest.document_key(tenant.tenant_id, document_id)) is None:
            continue
        try:
            confirm_direct_upload(write_factory, storage, client, tenant, document_id=document_id)
            recorded += 1
        except DomainError as exc:  # too large (removed), or gone meanwhile: the next pass sees
            log.info("document.reconcile_refused", document_id=document_id, code=exc.code)
    return recorded
