"""Recording a document's terminal outcome: its status, result and reason, its batch's counter
and its outcome event, in one transaction, once.

The values here cross DBOS as step inputs and outputs (`@durable`): what the engine made of a
document is an `Extraction`, either `Extracted` (a status, a confidence and the result, inline
or in storage) or a `Rejection` (a code and a reason); both carry the document's version while
PROCESSING and its batch, so recording needs no second read. `Decision` is the terminal status
to record. A batch's immutable facts (`batch_facts`) are read once per process and kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from dbos import DBOSClient
from sqlalchemy.orm import Session

from docflow.batches.service import (
    count_cancelled,
    count_document,
    get_batch,
    recount_document,
)
from docflow.documents.events import DocumentOutcome, document_outcome
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.errors import Conflict, get_one
from docflow.events.models import OutboxEvent
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.llm.context import GapRequest
from docflow.quotas.service import count_pages
from docflow.tenancy import TenantContext, recorded_by_flow, until_set
from docflow.workflows.service import get_workflow

log = structlog.get_logger(__name__)


@durable
@dataclass(frozen=True, slots=True)
class Extracted:
    """The engine's status and confidence, with the result inline (`result`) or, when too
    large, in storage under `result_ref` (exactly one of the two is set)."""

    status: str
    confidence: float
    reasons: tuple[str, ...]
    result: dict[str, Any] | None
    result_ref: str | None
    version: int
    batch_id: str
    # The weak fields to ask a language model for, with the lines chosen for them (None: no
    # provider is configured, or no field is weak); `document.gapfill` consumes it.
    gaps: GapRequest | None = None
    # Pages the engine read (counted in the tenant's month when the outcome is recorded).
    pages: int = 0


@durable
@dataclass(frozen=True, slots=True)
class Rejection:
    """The file cannot be processed (`code`, `reason`): final, never retried."""

    code: str
    reason: str
    version: int
    batch_id: str


Extraction = Extracted | Rejection
"""What the engine made of a document, with the version and batch it was made for."""


@durable
@dataclass(frozen=True, slots=True)
class Decision:
    """The document's terminal status, with an error code and reason when it is not SUCCEEDED."""

    status: str
    error_code: str | None = None
    reason: str | None = None
    # Sent to review as a quality-assurance sample (`docflow.trust.gate.qa_sample`).
    qa_sample: bool = False


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
    tenant = TenantContext(tenant_id=recorded_by_flow(tenant_id))
    batch = get_batch(session, tenant, batch_id=batch_id)
    workflow = get_workflow(
        session, tenant, workflow_id=batch.workflow_id, version=batch.workflow_version
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


def load(session: Session, tenant_id: str, document_id: str, *, fresh: bool = False) -> Document:
    """The document; NotFound when it is missing (or another tenant's)."""
    document = get_one(
        DocumentRepository(session, tenant_id).get(document_id, fresh=fresh), "document"
    )
    return document


@dataclass(frozen=True, slots=True)
class _Recorded:
    """The outcome was set on `version` of the document at `now`, or the document was found
    terminal already (`found`, its status: nothing was set)."""

    version: int
    batch_id: str
    now: datetime
    found: str | None = None


def record_outcome(
    session: Session,
    client: DBOSClient,
    *,
    tenant_id: str,
    document_id: str,
    decision: Decision,
    extraction: Extraction | None = None,
    then: Callable[[OutboxEvent], object] | None = None,
) -> str:
    """Record the document's terminal status, result and reason, count it in its batch (which
    enqueues the batch's completion when it was the last, see `batches.service.count_document`)
    and write its outcome event, in the caller's transaction, once: a document already terminal
    is left as it is. Returns the document's status afterwards. `then`, when given, is called
    with the outcome event in the same transaction, only when this call recorded the outcome.

    With the version `extraction` was made for this is three statements; when the document
    changed since (or without an extraction), it is read first."""
    expected = extraction.version if extraction is not None else None
    found = extraction if isinstance(extraction, Extracted) else None
    values: dict[str, Any] = {
        "status": decision.status,
        "error_code": decision.error_code,
        "error_reason": decision.reason,
        "confidence": found.confidence if found else None,
        "result": found.result if found else None,
        "result_ref": found.result_ref if found else None,
        "qa_sample": decision.qa_sample,
    }

    def attempt() -> _Recorded | None:
        nonlocal expected
        version, batch_id = expected, extraction.batch_id if extraction is not None else None
        expected = None  # should this attempt lose, the next one reads the document
        now = utcnow()
        if version is None or batch_id is None:
            document = load(session, tenant_id, document_id, fresh=True)
            version, batch_id = document.version, document.batch_id
            if document.status in TERMINAL_DOCUMENT_STATUSES:
                return _Recorded(version, batch_id, now, found=document.status)
        repo = DocumentRepository(session, tenant_id)
        won = repo.compare_and_set(
            document_id, expected_version=version, completed_at=now, updated_at=now, **values
        )
        return _Recorded(version, batch_id, now) if won else None

    recorded = until_set(
        attempt, conflict="the document kept changing while its outcome was recorded"
    )
    if recorded.found is not None:
        return recorded.found
    event = _counted(session, client, tenant_id, document_id, decision, values, recorded)
    if then is not None:
        then(event)
    if found is not None:
        count_pages(session, tenant_id, pages=found.pages)
    return decision.status


def _counted(
    session: Session,
    client: DBOSClient,
    tenant_id: str,
    document_id: str,
    decision: Decision,
    values: dict[str, Any],
    recorded: _Recorded,
) -> OutboxEvent:
    batch_id = recorded.batch_id
    count_document(
        session,
        client,
        tenant_id=tenant_id,
        batch_id=batch_id,
        status=decision.status,
        now=recorded.now,
    )
    facts = batch_facts(session, tenant_id, batch_id)
    event = document_outcome(
        session,
        DocumentOutcome(
            tenant_id=tenant_id,
            project_id=facts.project_id,
            batch_id=batch_id,
            document_id=document_id,
            workflow_id=facts.workflow_id,
            workflow_version=facts.workflow_version,
            status=decision.status,
            error_code=decision.error_code,
            confidence=values["confidence"],
            version=recorded.version + 1,
        ),
    )
    log.info(
        "document.completed",
        tenant_id=tenant_id,
        document_id=document_id,
        status=decision.status,
        error_code=decision.error_code,
    )
    return event


class DocumentChanged(Conflict):
    code = "document_changed"


@dataclass(frozen=True, slots=True)
class Revision:
    """A person's decision on a terminal document: its new status, error code and reason
    (None when SUCCEEDED) and its result with the corrected values."""

    status: str
    error_code: str | None
    reason: str | None
    result: dict[str, Any] | None
    # A re-run of the engine (a redriven dead letter) instead of a person: not marked
    # reviewed, and its confidence and stored result replace the old ones.
    rerun: bool = False
    confidence: float | None = None
    result_ref: str | None = None
    qa_sample: bool = False


def revise_outcome(
    session: Session,
    tenant: TenantContext,
    document: Document,
    revision: Revision,
    *,
    now: datetime,
) -> int:
    """Record `revision` on a terminal `document` as read (and locked) by the caller, and move
    its count in its batch (`batches.service.recount_document`), in the caller's transaction.
    Returns the document's new version; Conflict `document_changed` when it changed since it
    was read."""
    was = document.status
    if was not in TERMINAL_DOCUMENT_STATUSES:
        raise Conflict("the document has no outcome yet")
    won = DocumentRepository(session, tenant.tenant_id).compare_and_set(
        document.id,
        expected_version=document.version,
        status=revision.status,
        error_code=revision.error_code,
        error_reason=revision.reason,
        result=revision.result,
        updated_at=now,
        **(
            {
                "confidence": revision.confidence,
                "result_ref": revision.result_ref,
                "qa_sample": revision.qa_sample,
            }
            if revision.rerun
            else {"reviewed_at": now}
        ),
    )
    if not won:
        raise DocumentChanged("the document changed meanwhile: read it again")
    if was != revision.status:
        recount_document(
            session, tenant, batch_id=document.batch_id, was=was, status=revision.status, now=now
        )
    log.info(
        "document.revised",
        tenant_id=tenant.tenant_id,
        document_id=document.id,
        status=revision.status,
    )
    return document.version + 1


# The error code and reason of a document ended by its batch's cancellation.
BATCH_CANCELLED = "batch_cancelled"
CANCELLED_REASON = "the batch was cancelled before the document was done"


def cancel_document(session: Session, *, tenant_id: str, document_id: str) -> str:
    """End a document of a cancelled batch CANCELLED, once, counting it in the batch, in the
    caller's transaction; its status afterwards (a document already terminal is left as it is).
    For the document flow's steps, which find the batch cancelled after the cancellation
    skipped their document (see `DocumentRepository.cancel_unfinished`)."""
    repo = DocumentRepository(session, tenant_id)

    def attempt() -> str | None:
        document = load(session, tenant_id, document_id, fresh=True)
        if document.status in TERMINAL_DOCUMENT_STATUSES:
            return document.status
        now = utcnow()
        if not repo.compare_and_set(
            document_id,
            expected_version=document.version,
            status=DocumentStatus.CANCELLED.value,
            error_code=BATCH_CANCELLED,
            error_reason=CANCELLED_REASON,
            completed_at=now,
            updated_at=now,
        ):
            return None
        count_cancelled(session, tenant_id=tenant_id, batch_id=document.batch_id, now=now)
        log.info("document.cancelled", tenant_id=tenant_id, document_id=document_id)
        return DocumentStatus.CANCELLED.value

    return until_set(attempt, conflict="the document kept changing while it was cancelled")
