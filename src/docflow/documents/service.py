"""Use cases for documents: a batch's documents (optionally by status), one document, a
tenant's documents in an in-flight or attention status (e.g. the review queue), a document's
result, and the storage keys of a document's files. Its file's upload is `uploads/`."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from docflow.batches.repository import BatchRepository
from docflow.documents.models import INDEXED_DOCUMENT_STATUSES, Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.errors import InvalidInput, get_one
from docflow.kit.pagination import Page
from docflow.storage.base import Storage, object_key
from docflow.tenancy import TenantContext


def document_key(tenant_id: str, document_id: str, name: str = "original") -> str:
    """The object key of a file of a document: `tenants/{t}/documents/{d}/{name}`.

    `original` is the key a client uploads to directly in S3 mode (presigned PUT).
    """
    return object_key(tenant_id, "documents", document_id, name)


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
