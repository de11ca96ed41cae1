"""The bodies of the document flow's steps: plain functions of a session, storage and engine.

The hot path costs a handful of statements per document: `target` reads the document (the
batch's facts and pinned workflow definition come from a process-wide cache, as they never
change once the batch exists), `begin_document` marks it PROCESSING, and `persist` records the
outcome with a compare-and-set on the version `begin_document` left, the batch counter and the
outbox event, without reading the document again.

Each is idempotent, because a step may run twice (a crash after its effect and before DBOS
recorded it, or a false dead-executor recovery): state changes are compare-and-set on the
document's version and status, and the batch counters move in the same transaction as the
document reaching its terminal status, so a repeat changes nothing. They return small values
(ids, statuses, a result of bounded size); page images never leave `extract`.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
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
from docflow.errors import Conflict, NotFound
from docflow.events import emitters
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.pipeline import extract_document
from docflow.extraction.result import ExtractionResult
from docflow.extraction.sniff import sniff
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.tenancy import TenantContext
from docflow.workflows.service import get_workflow

log = structlog.get_logger(__name__)

# Codes of documents that fail before the engine sees them, or for reasons outside it.
NOT_UPLOADED = "not_uploaded"
UPLOAD_EXPIRED = "upload_expired"
LOW_CONFIDENCE = "low_confidence"
INVALID_WORKFLOW = "invalid_workflow"
INTERNAL_ERROR = RejectCode.INTERNAL_ERROR.value
_SNIFF_BYTES = 1024
_CAS_ATTEMPTS = 20


@durable
@dataclass(frozen=True, slots=True)
class Extraction:
    """What `extract` found: a rejection (code, reason), or the engine's status and
    confidence with the result inline (`result`) or in storage (`result_ref`)."""

    status: str
    confidence: float | None = None
    reasons: tuple[str, ...] = ()
    result: dict[str, Any] | None = None
    result_ref: str | None = None
    reject_code: str | None = None
    reject_reason: str | None = None
    # The document's version while PROCESSING and its batch: `persist` sets the outcome
    # against that version without reading the document again.
    version: int | None = None
    batch_id: str | None = None


@durable
@dataclass(frozen=True, slots=True)
class Decision:
    """The document's terminal status, with an error code and reason when it is not SUCCEEDED."""

    status: str
    error_code: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """What never changes about a batch once created: its project and pinned workflow
    version, with that version's definition and why the engine may not run it (`problem`: a
    version stored by an earlier release that today's rules refuse; None when it may)."""

    project_id: str
    workflow_id: str
    workflow_version: int
    definition: Any
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """A document about to be processed, as `target` read it."""

    status: str
    version: int
    batch_id: str
    name: str
    storage_key: str | None
    facts: BatchFacts


_FACTS_CACHE_SIZE = 512
_facts: OrderedDict[tuple[str, str], BatchFacts] = OrderedDict()
_facts_lock = threading.Lock()


def batch_facts(session: Session, tenant_id: str, batch_id: str) -> BatchFacts:
    """The batch's immutable facts, read once per process and then served from memory."""
    key = (tenant_id, batch_id)
    with _facts_lock:
        cached = _facts.get(key)
        if cached is not None:
            _facts.move_to_end(key)
            return cached
    batch = BatchRepository(session, tenant_id).get(batch_id)
    if batch is None:
        raise NotFound("batch not found")
    workflow = get_workflow(
        session,
        TenantContext(tenant_id=tenant_id),
        workflow_id=batch.workflow_id,
        version=batch.workflow_version,
    )
    facts = BatchFacts(
        project_id=batch.project_id,
        workflow_id=batch.workflow_id,
        workflow_version=batch.workflow_version,
        definition=workflow.definition,
        problem=workflow.problem,
    )
    if facts.problem is not None:
        log.warning(
            "batch.workflow_invalid",
            tenant_id=tenant_id,
            batch_id=batch_id,
            workflow_id=batch.workflow_id,
            workflow_version=batch.workflow_version,
        )
    with _facts_lock:
        _facts[key] = facts
        while len(_facts) > _FACTS_CACHE_SIZE:
            _facts.popitem(last=False)
    return facts


def _load(session: Session, tenant_id: str, document_id: str, *, fresh: bool = False) -> Document:
    document = DocumentRepository(session, tenant_id).get(document_id, fresh=fresh)
    if document is None:
        raise NotFound("document not found")
    return document


def target(session: Session, *, tenant_id: str, document_id: str) -> Target:
    """The document to process with its batch's facts. Reads only."""
    document = _load(session, tenant_id, document_id)
    return Target(
        status=document.status,
        version=document.version,
        batch_id=document.batch_id,
        name=document.name,
        storage_key=document.storage_key,
        facts=batch_facts(session, tenant_id, document.batch_id),
    )


def sniff_type(data: bytes) -> str:
    """The type of a stored file from its first bytes (a `DocumentKind` value), "" when
    unrecognised."""
    kind = sniff(data[:_SNIFF_BYTES])
    return kind.value if kind else ""


@dataclass(frozen=True, slots=True)
class Begun:
    """The document's status and version after `begin_document`."""

    status: str
    version: int


def begin_document(
    session: Session, *, tenant_id: str, document_id: str, detected_type: str
) -> Begun:
    """Mark the document PROCESSING with the type found in its bytes (`sniff_type`).

    Returns the document's status afterwards: PROCESSING to go on, or a terminal status when
    there is nothing left to do (a repeat after completion, or a document that failed before;
    one without a file fails `not_uploaded` here). The caller commits.
    """
    document = _load(session, tenant_id, document_id)
    if (
        document.status in TERMINAL_DOCUMENT_STATUSES
        or document.status == DocumentStatus.PROCESSING
    ):
        return Begun(document.status, document.version)
    if document.status == DocumentStatus.PENDING_UPLOAD or document.storage_key is None:
        status = decide_failure(
            session, tenant_id, document_id, NOT_UPLOADED, "the file was never uploaded"
        )
        return Begun(status, document.version + 1)
    now = utcnow()
    if DocumentRepository(session, tenant_id).compare_and_set(
        document_id,
        expected_version=document.version,
        status=DocumentStatus.PROCESSING.value,
        detected_type=detected_type or None,
        started_at=now,
        updated_at=now,
    ):
        return Begun(DocumentStatus.PROCESSING.value, document.version + 1)
    session.refresh(document)
    return Begun(document.status, document.version)


def extract(
    storage: Storage,
    data: bytes,
    document: Target,
    *,
    tenant_id: str,
    document_id: str,
    version: int,
    ocr: OcrEngine,
    limits: EngineLimits,
    inline_max_bytes: int,
) -> Extraction:
    """Run the engine on the file's bytes with the batch's pinned workflow definition.

    A rejection is a value, never an exception (it is final and must not be retried); storage
    errors propagate so the step retries. A result larger than `inline_max_bytes` as JSON is
    written to storage and only its key returned. A pinned definition the engine may not run
    (`BatchFacts.problem`) fails every document `invalid_workflow`. Touches no database.
    """
    facts = document.facts
    if facts.problem is not None:
        reason = (
            f"version {facts.workflow_version} of workflow {facts.workflow_id} cannot run "
            f"(publish a corrected version and start a new batch): {facts.problem}"
        )
        return _rejected(INVALID_WORKFLOW, reason, version, document.batch_id)
    outcome = extract_document(data, facts.definition, ocr=ocr, limits=limits)
    if isinstance(outcome, Rejected):
        reason = _with_name(outcome, document.name)
        return _rejected(outcome.code.value, reason, version, document.batch_id)
    extraction = _extraction(storage, tenant_id, document_id, outcome, inline_max_bytes)
    return replace(extraction, version=version, batch_id=document.batch_id)


def _rejected(code: str, reason: str, version: int, batch_id: str) -> Extraction:
    return Extraction(
        status="", reject_code=code, reject_reason=reason, version=version, batch_id=batch_id
    )


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
    """Record the document's terminal status, result and reason, count it in its batch and
    write its outcome event, in the caller's transaction, once: a document already terminal is
    left as it is. Returns the document's status afterwards.

    With the version `begin_document` left (`extraction.version`) this is three statements;
    when the document changed since (or without a version), it is read first."""
    repo = DocumentRepository(session, tenant_id)
    version = extraction.version if extraction is not None else None
    batch_id = extraction.batch_id if extraction is not None else None
    for _ in range(_CAS_ATTEMPTS):
        if version is None:
            document = _load(session, tenant_id, document_id, fresh=True)
            if document.status in TERMINAL_DOCUMENT_STATUSES:
                return document.status
            version, batch_id = document.version, document.batch_id
        now = utcnow()
        won = repo.compare_and_set(
            document_id,
            expected_version=version,
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
            break
        version = None  # changed meanwhile: read it and decide again
    else:
        raise Conflict("the document kept changing while its outcome was recorded")
    if batch_id is None:
        batch_id = _load(session, tenant_id, document_id).batch_id
    _count(session, tenant_id, batch_id, decision.status, now)
    facts = batch_facts(session, tenant_id, batch_id)
    emitters.document_outcome(
        session,
        emitters.DocumentOutcome(
            tenant_id=tenant_id,
            project_id=facts.project_id,
            batch_id=batch_id,
            document_id=document_id,
            workflow_id=facts.workflow_id,
            workflow_version=facts.workflow_version,
            status=decision.status,
            error_code=decision.error_code,
            confidence=extraction.confidence if extraction else None,
            version=version + 1,
        ),
    )
    log.info(
        "document.completed",
        tenant_id=tenant_id,
        document_id=document_id,
        status=decision.status,
        error_code=decision.error_code,
    )
    return decision.status


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
