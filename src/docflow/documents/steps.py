"""The bodies of the document flow's steps: plain functions of a session, storage and engine.

The hot path costs a handful of statements per document: `target` reads the document (the
batch's facts and pinned workflow definition come from a process-wide cache, as they never
change once the batch exists), `begin_document` marks it PROCESSING, and `persist` records the
outcome with a compare-and-set on the version `begin_document` left, the batch counter and the
outbox event, without reading the document again (`outcome.record_outcome`).

Each is idempotent, because a step may run twice (a crash after its effect and before DBOS
recorded it, or a false dead-executor recovery): state changes are compare-and-set on the
document's version and status, and the batch counters move in the same transaction as the
document reaching its terminal status, so a repeat changes nothing. They return small values
(ids, statuses, a result of bounded size); page images never leave `extract`.

A cancelled batch (`batches.lifecycle.cancel_batch`) stops here: its documents are CANCELLED,
which every step reads as terminal; one the cancellation skipped is ended CANCELLED by
`begin_document` (before the engine runs) or by `persist` (instead of its outcome), which
check the batch afresh (`batches.service.is_cancelled`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from dbos import DBOSClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches.service import is_cancelled
from docflow.documents.downstream import announce
from docflow.documents.events import DocumentOutcome, document_outcome
from docflow.documents.keys import words_key
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, DocumentStatus
from docflow.documents.outcome import (
    BatchFacts,
    Decision,
    Extracted,
    Extraction,
    Rejection,
    Revision,
    batch_facts,
    cancel_document,
    load,
    record_outcome,
    revise_outcome,
)
from docflow.documents.repository import DocumentRepository, downstream_due
from docflow.documents.service import (
    INTERNAL_ERROR,
    INVALID_WORKFLOW,
    LOW_CONFIDENCE,
    NOT_UPLOADED,
    document_key,
    fail_document,
)
from docflow.extraction.errors import RejectCode, Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.pipeline import first_reading, read_and_extract
from docflow.extraction.result import ExtractionResult
from docflow.extraction.sniff import sniff
from docflow.extraction.words import dumped
from docflow.kit.clock import utcnow
from docflow.kit.durable_json import durable
from docflow.llm.config import LlmConfig, provider_for
from docflow.llm.context import gap_request
from docflow.llm.gapfill import UNAVAILABLE, Where, fill
from docflow.llm.grounding import rescore
from docflow.llm.provider import ProviderError
from docflow.observability.metrics import observe_extraction
from docflow.quotas.service import count_pages
from docflow.runtime.context import Services
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext, recorded_by_flow
from docflow.trust.gate import Gated, gate, qa_sample
from docflow.trust.service import field_cuts

_SNIFF_BYTES = 1024


@durable
@dataclass(frozen=True, slots=True)
class Settled:
    """A document there was nothing left to do for: its status (terminal, or PROCESSING in
    another run of its flow)."""

    status: str


@dataclass(frozen=True, slots=True)
class Target:
    """A document about to be processed, as `target` read it."""

    status: str
    version: int
    batch_id: str
    name: str
    storage_key: str | None
    facts: BatchFacts


def target(session: Session, *, tenant_id: str, document_id: str) -> Target:
    """The document to process with its batch's facts. Reads only."""
    document = load(session, tenant_id, document_id)
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
    session: Session, client: DBOSClient, *, tenant_id: str, document_id: str, detected_type: str
) -> Begun:
    """Mark the document PROCESSING with the type found in its bytes (`sniff_type`).

    Returns the document's status afterwards: PROCESSING to go on, or a terminal status when
    there is nothing left to do (a repeat after completion, or a document that failed before;
    one without a file fails `not_uploaded` here). The caller commits.
    """
    document = load(session, tenant_id, document_id)
    if (
        document.status in TERMINAL_DOCUMENT_STATUSES
        or document.status == DocumentStatus.PROCESSING
    ):
        return Begun(document.status, document.version)
    if is_cancelled(session, tenant_id=tenant_id, batch_id=document.batch_id):
        status = cancel_document(session, tenant_id=tenant_id, document_id=document_id)
        return Begun(status, document.version + 1)
    if document.status == DocumentStatus.PENDING_UPLOAD or document.storage_key is None:
        status = fail_document(
            session,
            client,
            tenant_id=tenant_id,
            document_id=document_id,
            code=NOT_UPLOADED,
            reason="the file was never uploaded",
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


def run_engine(
    storage: Storage,
    data: bytes,
    document: Target,
    *,
    tenant_id: str,
    document_id: str,
    version: int,
    ocr: OcrEngine,
    second_ocr: OcrEngine | None = None,
    limits: EngineLimits,
    inline_max_bytes: int,
    gap_tokens: int | None = None,
) -> Extraction:
    """Run the engine on the file's bytes with the batch's pinned workflow definition.

    A rejection is a value, never an exception (it is final and must not be retried); storage
    errors propagate so the step retries. The words of the pages read are written to storage
    (`words_key`, for `GET /v1/documents/{id}/words`). A result larger than
    `inline_max_bytes` as JSON is written to storage and only its key returned. A pinned
    definition the engine may not run (`BatchFacts.problem`) fails every document
    `invalid_workflow`. With `gap_tokens` (a language model is configured), the weak fields
    and at most that many tokens of the lines around them come back too (`Extracted.gaps`).
    Touches no database.
    """
    facts = document.facts
    if facts.problem is not None:
        reason = (
            f"version {facts.workflow_version} of workflow {facts.workflow_id} cannot run "
            f"(publish a corrected version and start a new batch): {facts.problem}"
        )
        return Rejection(INVALID_WORKFLOW, reason, version, document.batch_id)
    outcome, pages = read_and_extract(
        data, facts.definition, ocr=ocr, second_ocr=second_ocr, limits=limits
    )
    if isinstance(outcome, Rejected):
        reason = _with_name(outcome, document.name)
        return Rejection(outcome.code.value, reason, version, document.batch_id)
    gaps = None
    if gap_tokens is not None and pages is not None:
        fields = {name: asdict(field) for name, field in outcome.fields.items()}
        gaps = gap_request(
            pages,
            facts.definition,
            fields,
            budget_tokens=gap_tokens,
            document_hash=hashlib.sha256(data).hexdigest(),
        )
    observe_extraction(outcome.timings_ms, outcome.pages_read)
    if pages is not None:
        engine = first_reading(facts.definition, second_ocr).value
        # same key on a repeat: idempotent; `document_words` reads it back
        storage.write_bytes(words_key(tenant_id, document_id), dumped(pages, ocr_engine=engine))
    result, ref = _stored(storage, tenant_id, document_id, outcome, inline_max_bytes)
    return Extracted(
        gaps=gaps,
        status=outcome.status.value,
        confidence=outcome.confidence,
        reasons=tuple(outcome.reasons),
        result=result,
        result_ref=ref,
        version=version,
        batch_id=document.batch_id,
        pages=outcome.page_count,
    )


def extract(s: Services, *, tenant_id: str, document_id: str) -> Extraction | Settled:
    """Read the document and its file, mark it PROCESSING (`begin_document`, its own
    transaction) and run the engine (`run_engine`); `Settled` when there is nothing to do."""
    with s.session_factory() as session:
        document = target(session, tenant_id=tenant_id, document_id=document_id)
    if document.status in TERMINAL_DOCUMENT_STATUSES:
        return Settled(document.status)
    data = b""
    if document.storage_key is not None:  # none: `begin_document` fails it `not_uploaded`
        data = s.storage.read_bytes(document.storage_key, max_bytes=s.settings.max_document_bytes)
    with s.write_session() as session, session.begin():
        begun = begin_document(
            session,
            s.client,
            tenant_id=tenant_id,
            document_id=document_id,
            detected_type=sniff_type(data),
        )
    if begun.status != DocumentStatus.PROCESSING:
        return Settled(begun.status)
    return run_engine(
        s.storage,
        data,
        document,
        tenant_id=tenant_id,
        document_id=document_id,
        version=begun.version,
        ocr=s.ocr(),
        second_ocr=s.second_ocr(),
        limits=s.limits,
        inline_max_bytes=s.settings.result_inline_max_bytes,
        gap_tokens=_gap_tokens(LlmConfig.from_settings(s.settings)),
    )


def _gap_tokens(config: LlmConfig) -> int | None:
    return config.context_tokens if config.enabled else None


def gapfill(s: Services, *, tenant_id: str, document_id: str, extraction: Extracted) -> Extracted:
    """Ask the configured language model for the weak fields of `extraction.gaps` (see
    `llm.gapfill`), merge the grounded answers into the result and decide the status again
    by the workflow's thresholds. Never raises for the provider's sake: a provider that
    stays down or a spent budget leaves the fields as they were, with the reason."""
    assert extraction.gaps is not None
    config = LlmConfig.from_settings(s.settings)
    with s.session_factory() as session:
        document = target(session, tenant_id=tenant_id, document_id=document_id)
    definition = document.facts.definition
    result = extraction.result
    if result is None and extraction.result_ref is not None:
        result = json.loads(
            s.storage.read_bytes(extraction.result_ref, max_bytes=s.settings.max_document_bytes)
        )
    assert result is not None
    where = Where(tenant_id, document.facts.project_id, document.batch_id, document_id)
    try:
        provider = provider_for(config)
    except ProviderError as exc:
        reason = f"{UNAVAILABLE}: {exc}; the fields stay as OCR read them"
        return replace(extraction, reasons=(*extraction.reasons, reason), gaps=None)
    filled = fill(
        s.write_session,
        provider,
        config,
        where,
        definition=definition,
        request=extraction.gaps,
        fields=result.get("fields") or {},
    )
    updated = {**result, "fields": filled.fields, "llm": filled.summary}
    status, confidence, reasons = rescore(updated, definition)
    reasons = (*reasons, *filled.notes)
    updated.update(status=status, confidence=confidence, reasons=list(reasons))
    inline, ref = _stored_dict(
        s.storage, tenant_id, document_id, updated, s.settings.result_inline_max_bytes
    )
    return replace(
        extraction,
        status=status,
        confidence=confidence,
        reasons=reasons,
        result=inline,
        result_ref=ref,
        gaps=None,
    )


def _with_name(rejected: Rejected, name: str) -> str:
    if rejected.code == RejectCode.UNSUPPORTED_TYPE:
        extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if extension:
            return f"{rejected.reason} (named .{extension}; the type is read from the bytes)"
    return rejected.reason


def _stored(
    storage: Storage,
    tenant_id: str,
    document_id: str,
    result: ExtractionResult,
    inline_max_bytes: int,
) -> tuple[dict[str, Any] | None, str | None]:
    """The result inline, or the key it was written to in storage when it is too large."""
    return _stored_dict(storage, tenant_id, document_id, result.to_dict(), inline_max_bytes)


def _stored_dict(
    storage: Storage,
    tenant_id: str,
    document_id: str,
    result: dict[str, Any],
    inline_max_bytes: int,
) -> tuple[dict[str, Any] | None, str | None]:
    encoded = json.dumps(result, separators=(",", ":"), default=str).encode()
    if len(encoded) <= inline_max_bytes:
        return json.loads(encoded), None
    ref = document_key(tenant_id, document_id, "result.json")
    storage.write_bytes(ref, encoded)  # same key and bytes on a repeat: idempotent
    return None, ref


def decide(extraction: Extraction) -> Decision:
    """The document's terminal status: a rejection is FAILED with its code; otherwise the
    engine's status by the workflow's thresholds (FAILED below `confidence_threshold`)."""
    if isinstance(extraction, Rejection):
        return Decision(DocumentStatus.FAILED.value, extraction.code, extraction.reason)
    reason = "; ".join(extraction.reasons) or None
    if extraction.status == DocumentStatus.SUCCEEDED:  # a reason only from the gap-fill
        return Decision(DocumentStatus.SUCCEEDED.value, None, reason)
    if extraction.status == DocumentStatus.REVIEW_REQUIRED:
        return Decision(DocumentStatus.REVIEW_REQUIRED.value, None, reason)
    return Decision(DocumentStatus.FAILED.value, LOW_CONFIDENCE, reason or "confidence too low")


def trusted(
    session: Session,
    *,
    tenant_id: str,
    document_id: str,
    extraction: Extracted,
    decision: Decision,
    learning: bool,
) -> Decision:
    """`decision` through earned trust (with `learning`: each field against the cut its
    workflow version earned) and quality-assurance sampling (`docflow.trust.gate`). A result
    kept in storage (too large to keep inline) is decided by the thresholds alone."""
    if decision.status == DocumentStatus.FAILED or extraction.result is None:
        return decision
    facts = batch_facts(session, tenant_id, extraction.batch_id)
    reasons = tuple(extraction.reasons)
    gated = Gated(decision.status, reasons)
    if learning:
        cuts = field_cuts(
            session,
            TenantContext(tenant_id=recorded_by_flow(tenant_id)),
            workflow_id=facts.workflow_id,
            version=facts.workflow_version,
        )
        gated = gate(facts.definition, extraction.result, decision.status, reasons, cuts)
    gated = qa_sample(facts.definition, gated, document_id)
    if gated.status == decision.status and not gated.qa_sample:
        return decision
    return Decision(gated.status, None, "; ".join(gated.reasons) or None, gated.qa_sample)


def persist(
    session: Session,
    client: DBOSClient,
    *,
    tenant_id: str,
    document_id: str,
    extraction: Extraction,
    learning: bool = True,
) -> str:
    """Record the outcome `decide` gives for `extraction` (through `trusted`), once (see
    `outcome.record_outcome`); the document's status afterwards. The caller commits. When the
    batch was cancelled meanwhile, the document ends CANCELLED instead and the result is
    dropped (a large one already stored stays under the document's key until the batch is
    deleted)."""
    if is_cancelled(session, tenant_id=tenant_id, batch_id=extraction.batch_id):
        return cancel_document(session, tenant_id=tenant_id, document_id=document_id)
    decision = decide(extraction)
    if isinstance(extraction, Extracted):
        decision = trusted(
            session,
            tenant_id=tenant_id,
            document_id=document_id,
            extraction=extraction,
            decision=decision,
            learning=learning,
        )
    return record_outcome(
        session,
        client,
        tenant_id=tenant_id,
        document_id=document_id,
        decision=decision,
        extraction=extraction,
    )


def rerun(s: Services, *, tenant_id: str, document_id: str) -> Extraction | Settled:
    """Run the engine again on a document FAILED `internal_error` (its dead letter was
    redriven), without touching its status: it stays terminal, and `revise` records the new
    outcome. `Settled` when it is no longer FAILED `internal_error`."""
    with s.session_factory() as session:
        document = target(session, tenant_id=tenant_id, document_id=document_id)
        code = load(session, tenant_id, document_id).error_code
    if (document.status, code) != (DocumentStatus.FAILED, INTERNAL_ERROR):
        return Settled(document.status)
    assert document.storage_key is not None  # `not_uploaded` otherwise
    data = s.storage.read_bytes(document.storage_key, max_bytes=s.settings.max_document_bytes)
    return run_engine(
        s.storage,
        data,
        document,
        tenant_id=tenant_id,
        document_id=document_id,
        version=document.version,
        ocr=s.ocr(),
        second_ocr=s.second_ocr(),
        limits=s.limits,
        inline_max_bytes=s.settings.result_inline_max_bytes,
        gap_tokens=_gap_tokens(LlmConfig.from_settings(s.settings)),
    )


def revise(
    session: Session,
    *,
    tenant_id: str,
    document_id: str,
    extraction: Extraction,
    learning: bool = True,
) -> str:
    """Record a re-run's outcome (`decide`, through `trusted`) on its document, still FAILED
    `internal_error` at the version it was run for, through `outcome.revise_outcome` (which
    moves its count in its batch and applies the batch's completion rule again), with its
    outcome event; the document's status afterwards (left as it is when it changed since).
    The caller commits."""
    tenant = TenantContext(tenant_id=recorded_by_flow(tenant_id))
    document = DocumentRepository(session, tenant_id).lock(document_id)
    assert document is not None
    if (document.status, document.error_code, document.version) != (
        DocumentStatus.FAILED,
        INTERNAL_ERROR,
        extraction.version,
    ):
        return document.status
    decision = decide(extraction)
    found = extraction if isinstance(extraction, Extracted) else None
    if found is not None:
        decision = trusted(
            session,
            tenant_id=tenant_id,
            document_id=document_id,
            extraction=found,
            decision=decision,
            learning=learning,
        )
    revision = Revision(
        status=decision.status,
        error_code=decision.error_code,
        reason=decision.reason,
        result=found.result if found else None,
        rerun=True,
        confidence=found.confidence if found else None,
        result_ref=found.result_ref if found else None,
        qa_sample=decision.qa_sample,
    )
    version = revise_outcome(session, tenant, document, revision, now=utcnow())
    facts = batch_facts(session, tenant_id, document.batch_id)
    document_outcome(
        session,
        DocumentOutcome(
            tenant_id=tenant_id,
            project_id=facts.project_id,
            batch_id=document.batch_id,
            document_id=document_id,
            workflow_id=facts.workflow_id,
            workflow_version=facts.workflow_version,
            status=decision.status,
            error_code=decision.error_code,
            confidence=revision.confidence,
            version=version,
        ),
    )
    if found is not None:
        count_pages(session, tenant_id, pages=found.pages)
    return decision.status


def downstream_pass(
    write_factory: sessionmaker[Session],
    *,
    lag_seconds: float,
    window_seconds: float,
    tick: datetime,
    limit: int,
) -> int:
    """The periodic check for lag: the documents that crossed `lag_seconds` in the
    `window_seconds` before `tick` with their search entry behind or a webhook delivery still
    pending (`downstream_due`, at most `limit` of each), each checked in its own transaction
    (`downstream.announce`); how many changed state."""
    before = tick - timedelta(seconds=lag_seconds)
    with write_factory() as session:
        due = downstream_due(
            session,
            changed_from=before - timedelta(seconds=window_seconds),
            changed_before=before,
            limit=limit,
        )
    changed = 0
    for tenant_id, document_id in due:
        with write_factory() as session, session.begin():
            found = announce(session, tenant_id, document_id, lag_seconds=lag_seconds, now=utcnow())
        changed += found is not None
    return changed
