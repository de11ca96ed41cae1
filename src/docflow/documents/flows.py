"""The document flow: one DBOS workflow per document, `doc:{document_id}`, on the documents queue.

Steps (their names appear in the execution history):
1. `document.extract`  read the document and its file, mark it PROCESSING with the type found in
                       the first bytes, run the engine with the batch's pinned definition, and
                       decide the terminal status by the workflow's thresholds
2. `document.persist`  status, result (inline or a storage reference), batch counter and outcome
                       event, in one transaction
Two steps, because each step costs its checkpoint in the system database: the engine's work
sits between the two writes the document needs. Database and storage errors retry with
exponential backoff (`docflow.retry`; the steps are idempotent); a file the engine rejects is a
value, not an error, so it is never retried. Anything else that escapes a step ends the
document FAILED `internal_error` (step `document.fail`): the flow itself never fails, so neither
does its batch nor the worker.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbos import DBOS
from dbos._error import DBOSMaxStepRetriesExceeded

from docflow.documents import steps
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, DocumentStatus
from docflow.documents.steps import Decision, Extraction
from docflow.kit.durable_json import durable, error_kind
from docflow.retry import db_step
from docflow.runtime import services

DOCUMENT_FLOW = "docflow.document"


def flow_id(document_id: str) -> str:
    """The workflow id of a document's flow."""
    return f"doc:{document_id}"


@durable
@dataclass(frozen=True, slots=True)
class Outcome:
    """What `document.extract` decided: the terminal status to record with the engine's
    extraction, or `done` with the status of a document there was nothing left to do for."""

    decision: Decision | None = None
    extraction: Extraction | None = None
    done: str | None = None


@db_step("document.extract")
def extract(tenant_id: str, document_id: str) -> Outcome:
    s = services()
    with s.session_factory() as session:
        document = steps.target(session, tenant_id=tenant_id, document_id=document_id)
    if document.status in TERMINAL_DOCUMENT_STATUSES:
        return Outcome(done=document.status)
    data = b""
    if document.storage_key is not None:  # none: `begin_document` fails it `not_uploaded`
        data = s.storage.read_bytes(document.storage_key, max_bytes=s.settings.max_document_bytes)
    with s.write_session() as session, session.begin():
        begun = steps.begin_document(
            session,
            tenant_id=tenant_id,
            document_id=document_id,
            detected_type=steps.sniff_type(data),
        )
    if begun.status != DocumentStatus.PROCESSING:
        return Outcome(done=begun.status)
    extraction = steps.extract(
        s.storage,
        data,
        document,
        tenant_id=tenant_id,
        document_id=document_id,
        version=begun.version,
        ocr=s.ocr(),
        limits=s.limits,
        inline_max_bytes=s.settings.result_inline_max_bytes,
    )
    return Outcome(decision=steps.decide(extraction), extraction=extraction)


@db_step("document.persist")
def persist(tenant_id: str, document_id: str, decision: Decision, extraction: Extraction) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.persist(
            session,
            tenant_id=tenant_id,
            document_id=document_id,
            decision=decision,
            extraction=extraction,
        )


@db_step("document.fail")
def fail(tenant_id: str, document_id: str, code: str, reason: str) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.decide_failure(session, tenant_id, document_id, code, reason)


@DBOS.workflow(name=DOCUMENT_FLOW)
def document_flow(tenant_id: str, document_id: str) -> str:
    """Process one document to a terminal status and return it; never raises for the
    document's sake (an unexpected error ends it FAILED `internal_error`)."""
    try:
        outcome = extract(tenant_id, document_id)
        if outcome.decision is None or outcome.extraction is None:
            return outcome.done or DocumentStatus.FAILED.value
        return persist(tenant_id, document_id, outcome.decision, outcome.extraction)
    except Exception as exc:  # one document's failure must not fail its batch
        return fail(tenant_id, document_id, steps.INTERNAL_ERROR, failure_reason(exc))


def failure_reason(exc: Exception) -> str:
    """A readable reason for an unexpected error: where it happened and its kind, never its
    message (which may quote a document's content or a database row)."""
    if isinstance(exc, DBOSMaxStepRetriesExceeded):
        last = error_kind(exc.errors[-1]) if exc.errors else "unknown error"
        return f"{exc.step_name} still failed after {exc.max_retries} attempts ({last})"
    return f"processing failed: {error_kind(exc)}"
