"""Use cases for documents: a batch's documents (optionally by status), one document, a
tenant's documents in an in-flight or attention status (e.g. the review queue), a document's
result and the storage keys of its files; and, for the batches, starting their documents'
processing and failing documents. A document's upload is `uploads/`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session

from docflow.batches.repository import BatchRepository
from docflow.documents.keys import words_key
from docflow.documents.models import (
    INDEXED_DOCUMENT_STATUSES,
    TERMINAL_DOCUMENT_STATUSES,
    Document,
    DocumentStatus,
)
from docflow.documents.outcome import (
    BATCH_CANCELLED,
    CANCELLED_REASON,
    Decision,
    record_outcome,
)
from docflow.documents.repository import DocumentFilter, DocumentRepository
from docflow.errors import Conflict, InvalidInput, NotFound, get_one
from docflow.events.models import DeadLetter, OutboxEvent
from docflow.events.outbox import envelope_of
from docflow.events.service import add_dead_letter
from docflow.extraction.definition import FIELD_NAME
from docflow.extraction.errors import RejectCode
from docflow.kit import ids
from docflow.kit.pagination import Page
from docflow.observability import tracing
from docflow.runtime.context import DOCUMENTS_QUEUE
from docflow.storage.base import Storage, object_key
from docflow.tenancy import TenantContext


def document_key(tenant_id: str, document_id: str, name: str = "original") -> str:
    """The object key of a file of a document: `tenants/{t}/documents/{d}/{name}`.

    `original` is the incoming key a client uploads to directly in S3 mode (presigned POST).
    A landed file is copied from it to a delivery key of its own before it is recorded, so a
    client posting again can only write to `original`, never over the recorded file.
    """
    return object_key(tenant_id, "documents", document_id, name)


# Codes of documents that fail before the engine sees them, or for reasons outside it.
NOT_UPLOADED = "not_uploaded"
UPLOAD_EXPIRED = "upload_expired"
LOW_CONFIDENCE = "low_confidence"
INVALID_WORKFLOW = "invalid_workflow"
INTERNAL_ERROR = RejectCode.INTERNAL_ERROR.value
# The workflow that processes one document (see `documents.flows`).
DOCUMENT_FLOW = "docflow.document"
# The workflow that runs a document again for its redriven dead letter (`documents.flows`).
REDRIVE_FLOW = "docflow.document.redrive"


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
    get_one(BatchRepository(session, tenant.tenant_id).get(batch_id), "batch")
    return DocumentRepository(session, tenant.tenant_id).page_in_batch(
        batch_id, status=status, cursor=cursor, limit=limit
    )


def get_document(session: Session, tenant: TenantContext, *, document_id: str) -> Document:
    """One of the tenant's documents, result included; NotFound for a missing id or another
    tenant's."""
    return get_one(DocumentRepository(session, tenant.tenant_id).get(document_id), "document")


def lock_document(session: Session, tenant: TenantContext, *, document_id: str) -> Document:
    """One of the tenant's documents, read afresh and locked until the transaction ends (see
    `DocumentRepository.lock`); NotFound for a missing id or another tenant's."""
    return get_one(DocumentRepository(session, tenant.tenant_id).lock(document_id), "document")


def get_fresh(session: Session, tenant: TenantContext, *, document_id: str) -> Document:
    """`get_document`, read again even when the session holds the row already."""
    repo = DocumentRepository(session, tenant.tenant_id)
    return get_one(repo.get(document_id, fresh=True), "document")


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


class FileNotUploaded(NotFound):
    """The document's file has not landed (yet, or ever): there is nothing to download."""

    code = "file_not_uploaded"


@dataclass(frozen=True, slots=True)
class StoredFile:
    """Where a document's original file is and how to hand it out."""

    key: str
    content_type: str
    content_disposition: str
    size: int | None


def content_disposition(name: str) -> str:
    """`attachment` with the document's name, quoted safely (RFC 6266): an ASCII `filename`
    where every character outside printable ASCII, `"`, `\\` and `%` is `_`, and the exact
    name as UTF-8 in `filename*`."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\%' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def document_file(session: Session, tenant: TenantContext, *, document_id: str) -> StoredFile:
    """The stored original of one of the tenant's documents (a re-run's document: the upload
    it shares); NotFound for a missing id or another tenant's, `FileNotUploaded` (404) before
    its file landed."""
    document = get_document(session, tenant, document_id=document_id)
    if document.storage_key is None:
        raise FileNotUploaded("the document's file has not been uploaded")
    return StoredFile(
        key=document.storage_key,
        content_type=document.content_type,
        content_disposition=content_disposition(document.name),
        size=document.size,
    )


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


def _bound(moment: datetime | None, field: str) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise InvalidInput("a time must carry its timezone", field=field)
    return ids.floor_for(ids.DOCUMENT, moment)


def query_documents(
    session: Session,
    tenant: TenantContext,
    *,
    status: str | None = None,
    project_id: str | None = None,
    workflow_id: str | None = None,
    batch_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    field: str | None = None,
    cursor: str | None,
    limit: int,
) -> Page[Document]:
    """The tenant's documents, newest first, kept by every condition given: in `status`, of a
    project, workflow or batch, created at `since` or later and before `until` (to the
    millisecond, from the creation time in the id), and, with `field`, whose result names that
    field among the reasons for its status (a required field missing or below the review
    threshold). `field` without `status` means REVIEW_REQUIRED: the documents waiting for a
    person to check that field. An unknown id in a filter simply matches nothing."""
    _check_status(status)
    if field is not None:
        if not re.fullmatch(FIELD_NAME, field):
            raise InvalidInput("not a field name", field="field")
        status = status or DocumentStatus.REVIEW_REQUIRED.value
    match = DocumentFilter(
        status=status,
        project_id=project_id,
        workflow_id=workflow_id,
        batch_id=batch_id,
        after=_bound(since, "since"),
        before=_bound(until, "until"),
        weak_field=field,
    )
    return DocumentRepository(session, tenant.tenant_id).page_matching(
        match, cursor=cursor, limit=limit
    )


def flow_id(document_id: str) -> str:
    """The workflow id of a document's flow."""
    return f"doc:{document_id}"


def start_processing(
    session: Session,
    client: DBOSClient,
    *,
    tenant_id: str,
    document_ids: tuple[str, ...],
    queue: str = DOCUMENTS_QUEUE,
) -> None:
    """Enqueue the documents' flows in the session's transaction, in order, on `queue` (the
    tenant's plan's, `quotas.service.documents_queue`) with the tenant as partition key (a
    flow that exists already is not enqueued twice)."""
    for document_id in document_ids:
        options: EnqueueOptions = {
            "workflow_name": DOCUMENT_FLOW,
            "queue_name": queue,
            "workflow_id": flow_id(document_id),
            "queue_partition_key": tenant_id,
            "otel_context": tracing.current(),  # the batch's trace
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


# The consumer name of the dead letters of documents that failed on an internal error: their
# target is the document (see `fail_internal`).
DEAD_LETTER_CONSUMER = "documents"


def fail_internal(
    session: Session,
    client: DBOSClient,
    *,
    tenant_id: str,
    document_id: str,
    reason: str,
    category: str,
    attempts: int,
    error: str | None = None,
) -> str:
    """Fail a document that is not yet terminal with `internal_error` (see `fail_document`)
    and, in the same transaction, write a dead letter of consumer `documents` for it: target the
    document, the error's `category`, `error` (by default the reason) and `attempts`, with the
    document's failure event as its event. One letter per document flow, however often this
    runs; none when the document was terminal already. Its status afterwards."""

    def dead_letter(event: OutboxEvent) -> str:
        return add_dead_letter(
            session,
            consumer_name=DEAD_LETTER_CONSUMER,
            raw=envelope_of(event).to_dict(),
            error=error or reason,
            category=category,
            attempts=attempts,
            workflow_id=flow_id(document_id),
            target=document_id,
        )

    decision = Decision(DocumentStatus.FAILED.value, INTERNAL_ERROR, reason)
    return record_outcome(
        session,
        client,
        tenant_id=tenant_id,
        document_id=document_id,
        decision=decision,
        then=dead_letter,
    )


def redrive_document(session: Session, client: DBOSClient, letter: DeadLetter) -> str:
    """Run the document of a `documents` dead letter again (the letter's redrive, see
    `events.service.redrive`): enqueue its redrive flow in the session's transaction, with an
    id derived from the letter, so one letter runs it once; the flow's id. Conflict when the
    document is gone or no longer FAILED `internal_error`."""
    assert letter.target is not None
    document = DocumentRepository(session, letter.tenant_id).lock(letter.target)
    if document is None:
        raise Conflict("the dead letter's document no longer exists", field="target")
    if (document.status, document.error_code) != (DocumentStatus.FAILED, INTERNAL_ERROR):
        raise Conflict("the document is no longer failed on an internal error", field="target")
    workflow_id = f"{flow_id(document.id)}:redrive:{letter.id}"
    # On the queue the document ran on (its plan's, so the redrive counts against its limits).
    ran = client.list_workflows(workflow_ids=[flow_id(document.id)], load_input=False)
    options: EnqueueOptions = {
        "workflow_name": REDRIVE_FLOW,
        "queue_name": (ran[0].queue_name if ran else None) or DOCUMENTS_QUEUE,
        "workflow_id": workflow_id,
        "queue_partition_key": letter.tenant_id,
        "otel_context": tracing.current(),
    }
    client.enqueue_in_transaction(session, options, letter.tenant_id, document.id, letter.id)
    return workflow_id


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


def cancel_unfinished(session: Session, *, tenant_id: str, batch_id: str, now: datetime) -> int:
    """End the batch's documents not yet terminal CANCELLED (code `batch_cancelled`), in the
    caller's transaction, which holds the batch; how many (see
    `DocumentRepository.cancel_unfinished` for the ones skipped)."""
    return DocumentRepository(session, tenant_id).cancel_unfinished(
        batch_id, code=BATCH_CANCELLED, reason=CANCELLED_REASON, now=now
    )


def stored_keys(
    session: Session, *, tenant_id: str, batch_id: str, only: Sequence[str] | None = None
) -> list[str]:
    """The storage keys to remove with the batch's documents (`only` those of them, when
    given): each one's result (`result_ref`, and the key a large result is written to, which
    a cancelled run may have left), its words (`words_key`) and its original, unless a
    document of another batch still runs that upload (a re-run shares the `storage_key` of the
    document it re-runs, never a copy; it is always in a batch of its own, so no other document
    of the batch shares it)."""
    repo = DocumentRepository(session, tenant_id)
    documents = repo.in_batch(batch_id) if only is None else repo.in_batch_with_ids(batch_id, only)
    uploads = sorted({d.source_document_id or d.id for d in documents if d.storage_key})
    kept = repo.referenced_outside(batch_id, uploads)
    keys: dict[str, None] = {}
    for d in documents:
        upload = d.source_document_id or d.id
        if d.storage_key is not None and upload not in kept:
            keys[d.storage_key] = None
        incoming = document_key(tenant_id, d.id)
        if incoming != d.storage_key:  # what a client posted again after the landing
            keys[incoming] = None
        if d.result_ref is not None:
            keys[d.result_ref] = None
        keys[document_key(tenant_id, d.id, "result.json")] = None
        keys[words_key(tenant_id, d.id)] = None
    return list(keys)


def document_ids(session: Session, *, tenant_id: str, batch_id: str) -> list[str]:
    """The ids of the batch's documents (what their events are about, when it is deleted)."""
    return DocumentRepository(session, tenant_id).ids_in_batch(batch_id)


def delete_documents(
    session: Session, *, tenant_id: str, batch_id: str, only: Sequence[str] | None = None
) -> int:
    """Delete the batch's documents (`only` those of them, when given) with their review
    claims, reviews and downstream records, in the caller's transaction; how many. Take
    `stored_keys` first: the rows say which files to remove."""
    return DocumentRepository(session, tenant_id).delete_in_batch(batch_id, only)


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
