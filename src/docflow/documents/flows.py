"""The document flow: one DBOS workflow per document, `doc:{document_id}`, on the documents queue.

Steps (their names appear in the execution history):
1. `document.load_and_sniff`  mark PROCESSING, type from the first bytes
2. `document.read_and_extract` read the file and run the engine with the pinned definition
3. `document.decide`          terminal status by the workflow's thresholds
4. `document.persist`         status, result (inline or a storage reference) and batch counters,
                              in one transaction
Database and storage errors retry with exponential backoff (the steps are idempotent); a file
the engine rejects is a value, not an error, so it is never retried. Anything else that escapes
a step ends the document FAILED `internal_error` (step `document.fail`): the flow itself never
fails, so neither does its batch nor the worker.
"""

from __future__ import annotations

from dbos import DBOS
from dbos._error import DBOSMaxStepRetriesExceeded
from sqlalchemy.exc import OperationalError

from docflow.documents import processing
from docflow.documents.models import DocumentStatus
from docflow.documents.processing import Decision, Extraction
from docflow.runtime import services

DOCUMENT_FLOW = "docflow.document"


def flow_id(document_id: str) -> str:
    """The workflow id of a document's flow."""
    return f"doc:{document_id}"


def _transient(exc: BaseException) -> bool:
    # A busy or lost database, a storage hiccup: worth another try. Anything else is a bug or a
    # bad input, and retrying would only repeat it.
    return isinstance(exc, OperationalError | OSError | TimeoutError | ConnectionError)


_RETRY = {
    "retries_allowed": True,
    "max_attempts": 5,
    "interval_seconds": 0.5,
    "backoff_rate": 2.0,
    "should_retry": _transient,
}


@DBOS.step(name="document.load_and_sniff", **_RETRY)  # type: ignore[arg-type]
def load_and_sniff(tenant_id: str, document_id: str) -> str:
    s = services()
    with s.session_factory() as session:
        kind = processing.sniff_stored(
            session, s.storage, tenant_id=tenant_id, document_id=document_id
        )
    with s.write_session() as session, session.begin():
        return processing.begin_document(
            session, tenant_id=tenant_id, document_id=document_id, detected_type=kind
        )


@DBOS.step(name="document.read_and_extract", **_RETRY)  # type: ignore[arg-type]
def read_and_extract(tenant_id: str, document_id: str) -> Extraction:
    s = services()
    with s.session_factory() as session:
        return processing.read_and_extract(
            session,
            s.storage,
            tenant_id=tenant_id,
            document_id=document_id,
            ocr=s.ocr(),
            limits=s.limits,
            max_bytes=s.settings.max_document_bytes,
            inline_max_bytes=s.settings.result_inline_max_bytes,
        )


@DBOS.step(name="document.decide")
def decide(extraction: Extraction) -> Decision:
    return processing.decide(extraction)


@DBOS.step(name="document.persist", **_RETRY)  # type: ignore[arg-type]
def persist(tenant_id: str, document_id: str, decision: Decision, extraction: Extraction) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return processing.persist(
            session,
            tenant_id=tenant_id,
            document_id=document_id,
            decision=decision,
            extraction=extraction,
        )


@DBOS.step(name="document.fail", **_RETRY)  # type: ignore[arg-type]
def fail(tenant_id: str, document_id: str, code: str, reason: str) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return processing.decide_failure(session, tenant_id, document_id, code, reason)


@DBOS.workflow(name=DOCUMENT_FLOW)
def document_flow(tenant_id: str, document_id: str) -> str:
    """Process one document to a terminal status and return it; never raises for the
    document's sake (an unexpected error ends it FAILED `internal_error`)."""
    try:
        status = load_and_sniff(tenant_id, document_id)
        if status != DocumentStatus.PROCESSING:
            return status
        extraction = read_and_extract(tenant_id, document_id)
        decision = decide(extraction)
        return persist(tenant_id, document_id, decision, extraction)
    except Exception as exc:  # one document's failure must not fail its batch
        return fail(tenant_id, document_id, processing.INTERNAL_ERROR, failure_reason(exc))


def failure_reason(exc: Exception) -> str:
    """A readable reason for an unexpected error: where it happened and its kind, never its
    message (which may quote a document's content or a database row)."""
    if isinstance(exc, DBOSMaxStepRetriesExceeded):
        last = type(exc.errors[-1]).__name__ if exc.errors else "unknown error"
        return f"{exc.step_name} still failed after {exc.max_retries} attempts ({last})"
    return f"processing failed: {type(exc).__name__}"
