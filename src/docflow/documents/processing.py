"""The bodies of the document flow's steps: plain functions of a session, storage and engine.

Each is idempotent, because a step may run twice (a crash after its effect and before DBOS
recorded it, or a false dead-executor recovery): state changes are compare-and-set on the
document's version and status, and the batch counters move in the same transaction as the
document reaching its terminal status, so a repeat changes nothing. They return small values
(ids, statuses, a result of bounded size); page images never leave `read_and_extract`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session

from docflow.batches.models import Batch
from docflow.batches.repository import BatchRepository
from docflow.documents.ingest import document_key
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.documents.storage import Storage
from docflow.errors import NotFound
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.pipeline import extract_document
from docflow.extraction.result import ExtractionResult
from docflow.extraction.sniff import sniff
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext
from docflow.workflows.service import get_workflow

log = structlog.get_logger(__name__)

# Codes of documents that fail before the engine sees them, or for reasons outside it.
NOT_UPLOADED = "not_uploaded"
UPLOAD_EXPIRED = "upload_expired"
LOW_CONFIDENCE = "low_confidence"
INTERNAL_ERROR = RejectCode.INTERNAL_ERROR.value
_SNIFF_BYTES = 1024


@dataclass(frozen=True, slots=True)
class Extraction:
    """What `read_and_extract` found: a rejection (code, reason), or the engine's status and
    confidence with the result inline (`result`) or in storage (`result_ref`)."""

    status: str
    confidence: float | None = None
    reasons: tuple[str, ...] = ()
    result: dict[str, Any] | None = None
    result_ref: str | None = None
    reject_code: str | None = None
    reject_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The document's terminal status, with an error code and reason when it is not SUCCEEDED."""

    status: str
    error_code: str | None = None
    reason: str | None = None


def _load(session: Session, tenant_id: str, document_id: str) -> Document:
    document = DocumentRepository(session, tenant_id).get(document_id)
    if document is None:
        raise NotFound("document not found")
    return document


def sniff_stored(session: Session, storage: Storage, *, tenant_id: str, document_id: str) -> str:
    """The type of the document's stored file from its first bytes (a `DocumentKind` value),
    "" when unrecognised or when no file is stored. Reads only; call it outside write
    transactions (storage may be remote)."""
    document = _load(session, tenant_id, document_id)
    if document.storage_key is None:
        return ""
    with storage.open_read(document.storage_key) as stream:
        kind = sniff(stream.read(_SNIFF_BYTES))
    return kind.value if kind else ""


def begin_document(
    session: Session, *, tenant_id: str, document_id: str, detected_type: str
) -> str:
    """Mark the document PROCESSING with the type found in its bytes (`sniff_stored`).

    Returns the document's status afterwards: PROCESSING to go on, or a terminal status when
    there is nothing left to do (a repeat after completion, or a document that failed before;
    one without a file fails `not_uploaded` here). The caller commits.
    """
    document = _load(session, tenant_id, document_id)
    if (
        document.status in TERMINAL_DOCUMENT_STATUSES
        or document.status == DocumentStatus.PROCESSING
    ):
        return document.status
    if document.status == DocumentStatus.PENDING_UPLOAD or document.storage_key is None:
        decide_failure(session, tenant_id, document_id, NOT_UPLOADED, "the file was never uploaded")
        return DocumentStatus.FAILED.value
    now = utcnow()
    DocumentRepository(session, tenant_id).compare_and_set(
        document_id,
        expected_version=document.version,
        status=DocumentStatus.PROCESSING.value,
        detected_type=detected_type or None,
        started_at=now,
        updated_at=now,
    )
    session.refresh(document)
    return document.status


def read_and_extract(
    session: Session,
    storage: Storage,
    *,
    tenant_id: str,
    document_id: str,
    ocr: OcrEngine,
    limits: EngineLimits,
    max_bytes: int,
    inline_max_bytes: int,
) -> Extraction:
    """Read the stored file and run the engine with the batch's pinned workflow definition.

    A rejection is a value, never an exception (it is final and must not be retried); storage
    and database errors propagate so the step retries. A result larger than `inline_max_bytes`
    as JSON is written to storage and only its key returned. Read-only in the database.
    """
    document = _load(session, tenant_id, document_id)
    definition = _definition(session, tenant_id, document.batch_id)
    if document.storage_key is None:
        return Extraction(status="", reject_code=NOT_UPLOADED, reject_reason="no file stored")
    data = storage.read_bytes(document.storage_key, max_bytes=max_bytes)
    outcome = extract_document(data, definition, ocr=ocr, limits=limits)
    if isinstance(outcome, Rejected):
        reason = _with_name(outcome, document.name)
        return Extraction(status="", reject_code=outcome.code.value, reject_reason=reason)
    return _extraction(storage, tenant_id, document_id, outcome, inline_max_bytes)


def _definition(session: Session, tenant_id: str, batch_id: str) -> Any:
    batch = BatchRepository(session, tenant_id).get(batch_id)
    if batch is None:
        raise NotFound("batch not found")
    workflow = get_workflow(
        session,
        TenantContext(tenant_id=tenant_id),
        workflow_id=batch.workflow_id,
        version=batch.workflow_version,
    )
    return workflow.definition


def _with_name(rejected: Rejected, name: str) -> str:
    if rejected.code == RejectCode.UNSUPPORTED_TYPE:
        extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if extension:
            return f"{rejected.reason} (named .{extension}; the type is read from the bytes)"
    return rejected.reason


def _extraction(
    storage: Storage,
    tenant_id: str,
    document_id: str,
    result: ExtractionResult,
    inline_max_bytes: int,
) -> Extraction:
    payload = result.to_dict()
    encoded = json.dumps(payload, separators=(",", ":"), default=str).encode()
    inline: dict[str, Any] | None = None
    ref: str | None = None
    if len(encoded) <= inline_max_bytes:
        inline = json.loads(encoded)
    else:
        ref = document_key(tenant_id, document_id, "result.json")
        storage.write_bytes(ref, encoded)  # same key and bytes on a repeat: idempotent
    return Extraction(
        status=result.status.value,
        confidence=result.confidence,
        reasons=tuple(result.reasons),
        result=inline,
        result_ref=ref,
    )


def decide(extraction: Extraction) -> Decision:
    """The document's terminal status: a rejection is FAILED with its code; otherwise the
    engine's status by the workflow's thresholds (FAILED below `confidence_threshold`)."""
    if extraction.reject_code is not None:
        return Decision(
            DocumentStatus.FAILED.value, extraction.reject_code, extraction.reject_reason
        )
    reason = "; ".join(extraction.reasons) or None
    if extraction.status == DocumentStatus.SUCCEEDED:
        return Decision(DocumentStatus.SUCCEEDED.value)
    if extraction.status == DocumentStatus.REVIEW_REQUIRED:
        return Decision(DocumentStatus.REVIEW_REQUIRED.value, None, reason)
    return Decision(DocumentStatus.FAILED.value, LOW_CONFIDENCE, reason or "confidence too low")


def persist(
    session: Session,
    *,
    tenant_id: str,
    document_id: str,
    decision: Decision,
    extraction: Extraction | None = None,
) -> str:
    """Record the document's terminal status, result and reason, and count it in its batch,
    in the caller's transaction, once: a document already terminal is left as it is.
    Returns the document's status afterwards."""
    repo = DocumentRepository(session, tenant_id)
    document = _load(session, tenant_id, document_id)
    if document.status in TERMINAL_DOCUMENT_STATUSES:
        return document.status
    now = utcnow()
    won = repo.compare_and_set(
        document_id,
        expected_version=document.version,
        status=decision.status,
        error_code=decision.error_code,
        error_reason=decision.reason,
        confidence=extraction.confidence if extraction else None,
        result=extraction.result if extraction else None,
        result_ref=extraction.result_ref if extraction else None,
        completed_at=now,
        updated_at=now,
    )
    if won:
        _count(session, tenant_id, document.batch_id, decision.status, now)
        _announce(session, tenant_id, document)
        log.info(
            "document.completed",
            tenant_id=tenant_id,
            document_id=document_id,
            status=decision.status,
            error_code=decision.error_code,
        )
    session.refresh(document)
    return document.status


def _announce(session: Session, tenant_id: str, document: Document) -> None:
    # The outcome's event, in the transaction that records the outcome (the outbox).
    from docflow.events import emitters

    session.refresh(document)
    batch = BatchRepository(session, tenant_id).get(document.batch_id)
    if batch is None:
        raise NotFound("batch not found")
    emitters.document_outcome(session, document, batch)


def decide_failure(
    session: Session, tenant_id: str, document_id: str, code: str, reason: str
) -> str:
    """Fail a document that is not yet terminal with `code` and `reason` (counted once)."""
    decision = Decision(DocumentStatus.FAILED.value, code, reason)
    return persist(session, tenant_id=tenant_id, document_id=document_id, decision=decision)


def _count(session: Session, tenant_id: str, batch_id: str, status: str, now: datetime) -> None:
    column = {
        DocumentStatus.SUCCEEDED.value: Batch.succeeded_count,
        DocumentStatus.REVIEW_REQUIRED.value: Batch.review_count,
        DocumentStatus.FAILED.value: Batch.failed_count,
    }[status]
    BatchRepository(session, tenant_id).increment(batch_id, column, now=now)
