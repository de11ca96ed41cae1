"""Use cases for documents: a batch's documents (optionally by status), one document, a
tenant's documents in an in-flight or attention status (e.g. the review queue), where to
upload a declared document's file (at batch creation, and again while it is still awaited);
and, for the batches, starting their documents' processing and failing documents."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow.batches.models import BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.documents.ingest import document_key
from docflow.documents.models import (
    INDEXED_DOCUMENT_STATUSES,
    TERMINAL_DOCUMENT_STATUSES,
    Document,
    DocumentStatus,
)
from docflow.documents.outcome import Decision, record_outcome
from docflow.documents.repository import DocumentRepository
from docflow.documents.storage import Storage
from docflow.documents.upload_urls import sign_upload, upload_url
from docflow.errors import Conflict, InvalidInput, NotFound
from docflow.extraction.errors import RejectCode
from docflow.kit.pagination import Page
from docflow.runtime import DOCUMENTS_QUEUE
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

# Codes of documents that fail before the engine sees them, or for reasons outside it.
NOT_UPLOADED = "not_uploaded"
UPLOAD_EXPIRED = "upload_expired"
LOW_CONFIDENCE = "low_confidence"
INVALID_WORKFLOW = "invalid_workflow"
INTERNAL_ERROR = RejectCode.INTERNAL_ERROR.value
# The workflow that processes one document (see `documents.flows`).
DOCUMENT_FLOW = "docflow.document"


def _check_status(status: str | None) -> None:
    if status is not None and status not in {s.value for s in DocumentStatus}:
        raise InvalidInput(f"unknown document status {status!r}", field="status")


def list_documents(
    session: Session,
    tenant: TenantContext,
    *,
    batch_id: str,
    status: str | None,
    cursor: str | None,
    limit: int,
) -> Page[Document]:
    """A batch's documents in id order, optionally only those in `status`; NotFound when the
    batch is missing or another tenant's."""
    _check_status(status)
    if BatchRepository(session, tenant.tenant_id).get(batch_id) is None:
        raise NotFound("batch not found")
    return DocumentRepository(session, tenant.tenant_id).page_in_batch(
        batch_id, status=status, cursor=cursor, limit=limit
    )


def get_document(session: Session, tenant: TenantContext, *, document_id: str) -> Document:
    """One of the tenant's documents, result included; NotFound for a missing id or another
    tenant's."""
    document = DocumentRepository(session, tenant.tenant_id).get(document_id)
    if document is None:
        raise NotFound("document not found")
    return document


def document_result(
    storage: Storage, document: Document, *, max_bytes: int
) -> dict[str, Any] | None:
    """The document's extraction result: inline in its row, or read back from storage when it
    was too large to keep inline (`result_ref`, always under the document's tenant)."""
    if document.result is not None or document.result_ref is None:
        return document.result
    loaded: dict[str, Any] = json.loads(
        storage.read_bytes(document.result_ref, max_bytes=max_bytes)
    )
    return loaded


def list_documents_by_status(
    session: Session, tenant: TenantContext, *, status: str, cursor: str | None, limit: int
) -> Page[Document]:
    """The tenant's documents in one of the indexed statuses (REVIEW_REQUIRED for the review
    queue, FAILED, or an in-flight one), the longest-waiting first."""
    _check_status(status)
    if status not in INDEXED_DOCUMENT_STATUSES:
        allowed = ", ".join(s.value for s in INDEXED_DOCUMENT_STATUSES)
        raise InvalidInput(f"status must be one of {allowed}", field="status")
    return DocumentRepository(session, tenant.tenant_id).page_by_status(
        status, cursor=cursor, limit=limit
    )


@dataclass(frozen=True, slots=True)
class UploadTarget:
    """How to upload one document's file: `method` its bytes to `url` with `headers`, before
    `expires_at`."""

    url: str
    expires_at: datetime
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "PUT"


def upload_target(
    document: Document,
    *,
    storage: Storage | None,
    secret: str,
    base_url: str,
    ttl_seconds: int,
    deadline: datetime,
    now: datetime,
) -> UploadTarget:
    """A fresh upload target for `document`, valid `ttl_seconds` from `now` but never past its
    batch's upload `deadline`: the storage's presigned PUT when it has one (S3), else the API's
    own `/v1/uploads/{token}` under `base_url`, signed for this tenant, document, declared type
    and size. Either way the declared Content-Type is part of the signature and must be sent."""
    lasts = min(timedelta(seconds=ttl_seconds), deadline - now)
    expires_in = max(1, int(lasts.total_seconds()))  # rounded down: never past the deadline
    headers = {"Content-Type": document.content_type}
    if storage is not None:
        presigned = storage.presigned_put_url(
            document_key(document.tenant_id, document.id),
            content_type=document.content_type,
            max_bytes=document.declared_size,
            expires_in=expires_in,
        )
        if presigned is not None:
            return UploadTarget(presigned, now + timedelta(seconds=expires_in), headers)
    expiry = int(now.timestamp()) + expires_in
    token = sign_upload(
        secret,
        tenant_id=document.tenant_id,
        document_id=document.id,
        content_type=document.content_type,
        max_bytes=document.declared_size,
        expires_at=expiry,
    )
    return UploadTarget(upload_url(base_url, token), datetime.fromtimestamp(expiry, UTC), headers)


class UploadNotReissued(Conflict):
    """No new upload URL: the document's file landed, its batch started, or its deadline passed.

    `code` says which: `document_already_uploaded`, `batch_started`, `upload_deadline_passed`.
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
    """A fresh upload target (see `upload_target`) for one of the tenant's documents still
    awaiting its file, in a batch not started whose upload deadline is after `now`. Earlier
    targets stay valid until they expire. NotFound for a missing id or another tenant's;
    `UploadNotReissued` (409) otherwise."""
    document = get_document(session, tenant, document_id=document_id)
    batch = BatchRepository(session, tenant.tenant_id).get(document.batch_id)
    if batch is None:  # the document was read under this tenant: its batch is there too
        raise NotFound("document not found")
    if document.uploaded_at is not None:
        raise UploadNotReissued(
            "document_already_uploaded", "the document's file was already uploaded"
        )
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


def flow_id(document_id: str) -> str:
    """The workflow id of a document's flow."""
    return f"doc:{document_id}"


def start_processing(
    session: Session, client: DBOSClient, *, tenant_id: str, document_ids: tuple[str, ...]
) -> None:
    """Enqueue the documents' flows in the session's transaction, on the documents queue with
    the tenant as partition key (a flow that exists already is not enqueued twice)."""
    for document_id in document_ids:
        options: EnqueueOptions = {
            "workflow_name": DOCUMENT_FLOW,
            "queue_name": DOCUMENTS_QUEUE,
            "workflow_id": flow_id(document_id),
            "queue_partition_key": tenant_id,
        }
        client.enqueue_in_transaction(session, options, tenant_id, document_id)


def status_counts(session: Session, *, tenant_id: str, batch_id: str) -> dict[str, int]:
    """How many of the batch's documents are in each status."""
    return DocumentRepository(session, tenant_id).status_counts(batch_id)


def fail_document(
    session: Session,
    client: DBOSClient,
    *,
    tenant_id: str,
    document_id: str,
    code: str,
    reason: str,
) -> str:
    """Fail a document that is not yet terminal with `code` and `reason`, counted once in its
    batch (see `outcome.record_outcome`), in the caller's transaction; its status afterwards."""
    decision = Decision(DocumentStatus.FAILED.value, code, reason)
    return record_outcome(
        session, client, tenant_id=tenant_id, document_id=document_id, decision=decision
    )


def fail_unfinished(
    session: Session, client: DBOSClient, *, tenant_id: str, batch_id: str, code: str, reason: str
) -> int:
    """Fail the batch's documents not yet terminal with `code` and `reason` (counted once
    each), in the caller's transaction; how many were failed."""
    unfinished = [
        d.id
        for d in DocumentRepository(session, tenant_id).in_batch(batch_id)
        if d.status not in TERMINAL_DOCUMENT_STATUSES
    ]
    for document_id in unfinished:
        fail_document(
            session, client, tenant_id=tenant_id, document_id=document_id, code=code, reason=reason
        )
    return len(unfinished)


def expire_uploads(session: Session, client: DBOSClient, *, tenant_id: str, batch_id: str) -> int:
    """Fail the batch's documents still waiting for their file with `upload_expired`; returns
    how many were waiting. Counted once each (a terminal document is left alone). The caller
    commits."""
    waiting = [
        d.id
        for d in DocumentRepository(session, tenant_id).in_batch(batch_id)
        if d.status == DocumentStatus.PENDING_UPLOAD
    ]
    for document_id in waiting:
        fail_document(
            session,
            client,
            tenant_id=tenant_id,
            document_id=document_id,
            code=UPLOAD_EXPIRED,
            reason="the file was not uploaded before the upload deadline",
        )
    return len(waiting)
