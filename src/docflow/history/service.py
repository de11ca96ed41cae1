"""Use cases for execution history: a batch's, a document's.

The batch or document is read first under the caller's tenant (NotFound otherwise, exactly as
for a missing id); only then are the executions it names read from DBOS: the batch's own
(workflow id = batch id), its completion (`complete:{batch_id}`) and each document's
(`doc:{document_id}`), with their checkpointed
steps, joined with the retried attempts recorded in `step_attempts` and with our rows' statuses
and error codes. Works against a launched DBOS or a `DBOSClient` alike (`WorkflowRecords`).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, Protocol

from dbos import StepInfo, WorkflowStatus
from sqlalchemy.orm import Session

from docflow.batches.service import completion_id, get_batch
from docflow.documents.models import Document
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import get_document
from docflow.history.repository import StepAttemptRepository
from docflow.history.schemas import (
    BatchHistory,
    DocumentHistory,
    ExecutionRead,
    StepOutcome,
    StepRead,
)
from docflow.kit.durable_json import RecordedError
from docflow.tenancy import TenantContext


class WorkflowRecords(Protocol):
    """What the history reads from DBOS: `DBOS` itself in a launched process, or a `DBOSClient`
    (an API process that runs no workflows)."""

    def list_workflows(
        self,
        *,
        workflow_ids: list[str] | None = ...,
        load_input: bool = ...,
        load_output: bool = ...,
    ) -> list[WorkflowStatus]: ...

    def list_workflow_steps(
        self, workflow_id: str, *, load_output: bool = ...
    ) -> list[StepInfo]: ...


def document_execution_id(document_id: str) -> str:
    """The execution (DBOS workflow) id of a document's flow."""
    return f"doc:{document_id}"


def batch_history(
    session: Session, records: WorkflowRecords, tenant: TenantContext, *, batch_id: str
) -> BatchHistory:
    """The batch's execution, its completion and every document's, with all their steps;
    NotFound for a missing batch or another tenant's."""
    batch = get_batch(session, tenant, batch_id=batch_id)
    documents = DocumentRepository(session, tenant.tenant_id).in_batch(batch.id)
    completion = completion_id(batch.id)
    ids = [batch.id, completion, *(document_execution_id(d.id) for d in documents)]
    executions = _executions(session, records, ids)
    return BatchHistory(
        batch_id=batch.id,
        status=batch.status,
        execution=executions.get(batch.id),
        completion=executions.get(completion),
        documents=[_document_history(d, executions) for d in documents],
    )


def document_history(
    session: Session, records: WorkflowRecords, tenant: TenantContext, *, document_id: str
) -> DocumentHistory:
    """The document's execution with its steps; NotFound for a missing document or another
    tenant's."""
    document = get_document(session, tenant, document_id=document_id)
    executions = _executions(session, records, [document_execution_id(document.id)])
    return _document_history(document, executions)


def _document_history(document: Document, executions: dict[str, ExecutionRead]) -> DocumentHistory:
    return DocumentHistory(
        document_id=document.id,
        batch_id=document.batch_id,
        name=document.name,
        status=document.status,
        error_code=document.error_code,
        error_reason=document.error_reason,
        execution=executions.get(document_execution_id(document.id)),
    )


def _executions(
    session: Session, records: WorkflowRecords, ids: list[str]
) -> dict[str, ExecutionRead]:
    statuses = records.list_workflows(workflow_ids=ids, load_input=False, load_output=False)
    failed: dict[tuple[str, int], list[str]] = defaultdict(list)
    for attempt in StepAttemptRepository(session).of_executions(ids):
        failed[(attempt.execution_id, attempt.step)].append(attempt.error)
    result: dict[str, ExecutionRead] = {}
    for status in statuses:
        # Outputs load with errors (DBOS reads both or neither); history never returns outputs.
        steps = records.list_workflow_steps(status.workflow_id, load_output=True)
        result[status.workflow_id] = _execution(status, steps, failed)
    return result


def _execution(
    status: WorkflowStatus, steps: list[StepInfo], failed: dict[tuple[str, int], list[str]]
) -> ExecutionRead:
    return ExecutionRead(
        execution_id=status.workflow_id,
        status=str(status.status),
        executor_id=status.executor_id,
        attempts=status.recovery_attempts or 1,
        created_at=_time(status.created_at),
        completed_at=_time(status.completed_at),
        error=_error(status.error),
        steps=[_step(status.workflow_id, s, failed) for s in steps],
    )


def _step(execution_id: str, info: StepInfo, failed: dict[tuple[str, int], list[str]]) -> StepRead:
    started, completed = info["started_at_epoch_ms"], info["completed_at_epoch_ms"]
    retried = list(failed.get((execution_id, info["function_id"]), ()))
    outcome: StepOutcome
    if info["error"] is not None:
        outcome = "failed"
    else:
        outcome = "running" if completed is None else "succeeded"
    return StepRead(
        step=info["function_id"],
        name=info["function_name"],
        started_at=_time(started),
        completed_at=_time(completed),
        duration_ms=completed - started if started is not None and completed is not None else None,
        attempt=len(retried) + 1,
        retried_errors=retried,
        outcome=outcome,
        error=_error(info["error"]),
        child_execution_id=info["child_workflow_id"],
    )


def _time(epoch_ms: int | None) -> datetime | None:
    return None if epoch_ms is None else datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


def _error(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, RecordedError):  # as DBOS stores it: the type's name and the message
        return f"{error.type_name}: {error}"
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)
