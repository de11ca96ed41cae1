"""The document flow: one DBOS workflow per document, `doc:{document_id}`, on the documents queue.

Steps (their names appear in the execution history):
1. `document.extract`  read the document and its file, mark it PROCESSING with the type found in
                       the first bytes, and run the engine with the batch's pinned definition
2. `document.persist`  the terminal status by the workflow's thresholds, result (inline or a
                       storage reference), batch counter and outcome event, in one transaction;
                       the last document of its batch enqueues the batch's completion there
Two steps, because each step costs its checkpoint in the system database: the engine's work
sits between the two writes the document needs. Database and storage errors retry with
exponential backoff (`docflow.retry`; the steps are idempotent); a file the engine rejects is a
value, not an error, so it is never retried. Anything else that escapes a step ends the
document FAILED `internal_error` (step `document.fail`): the flow itself never fails, so neither
does its batch nor the worker. The step bodies are in `documents.steps`.
"""

from __future__ import annotations

from dbos import DBOS
from dbos._error import DBOSMaxStepRetriesExceeded

from docflow.documents import steps
from docflow.documents.outcome import Extraction
from docflow.documents.service import DOCUMENT_FLOW, INTERNAL_ERROR, fail_document, flow_id
from docflow.documents.steps import Settled
from docflow.kit.durable_json import error_kind
from docflow.retry import db_step
from docflow.runtime import services

__all__ = ["DOCUMENT_FLOW", "document_flow", "failure_reason", "flow_id"]


@db_step("document.extract")
def extract(tenant_id: str, document_id: str) -> Extraction | Settled:
    return steps.extract(services(), tenant_id=tenant_id, document_id=document_id)


@db_step("document.persist")
def persist(tenant_id: str, document_id: str, extraction: Extraction) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.persist(
            session, s.client, tenant_id=tenant_id, document_id=document_id, extraction=extraction
        )


@db_step("document.fail")
def fail(tenant_id: str, document_id: str, code: str, reason: str) -> str:
    s = services()
    with s.write_session() as session, session.begin():
        return fail_document(
            session,
            s.client,
            tenant_id=tenant_id,
            document_id=document_id,
            code=code,
            reason=reason,
        )


@DBOS.workflow(name=DOCUMENT_FLOW)
def document_flow(tenant_id: str, document_id: str) -> str:
    """Process one document to a terminal status and return it; never raises for the
    document's sake (an unexpected error ends it FAILED `internal_error`)."""
    try:
        outcome = extract(tenant_id, document_id)
        if isinstance(outcome, Settled):
            return outcome.status
        return persist(tenant_id, document_id, outcome)
    except Exception as exc:  # one document's failure must not fail its batch
        return fail(tenant_id, document_id, INTERNAL_ERROR, failure_reason(exc))


def failure_reason(exc: Exception) -> str:
    """A readable reason for an unexpected error: where it happened and its kind, never its
    message (which may quote a document's content or a database row)."""
    if isinstance(exc, DBOSMaxStepRetriesExceeded):
        last = error_kind(exc.errors[-1]) if exc.errors else "unknown error"
        return f"{exc.step_name} still failed after {exc.max_retries} attempts ({last})"
    return f"processing failed: {error_kind(exc)}"
