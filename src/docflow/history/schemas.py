"""History answers."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

StepOutcome = Literal["succeeded", "failed", "running"]


class StepRead(BaseModel):
    """One step of an execution, as DBOS checkpointed it."""

    step: int = Field(description="the step's position in its execution, from 0")
    name: str = Field(description="the step's function; DBOS.* are the runtime's own steps")
    started_at: datetime | None
    completed_at: datetime | None
    duration_ms: int | None
    attempt: int = Field(
        description="the execution attempt that ran this step: 1, or more when the execution "
        "was resumed after a crash (a step that completed is never run again)"
    )
    retried_errors: list[str] = Field(
        default_factory=list,
        description="the error type of each failed attempt that was retried, in order "
        "(`attempt` is these plus the final run)",
    )
    outcome: StepOutcome
    error: str | None = Field(description="the error the step ended with, if it failed")
    child_execution_id: str | None = Field(
        description="the execution this step started or waited for (a document's)"
    )


class ExecutionRead(BaseModel):
    """A durable execution (a DBOS workflow) and its steps."""

    execution_id: str = Field(description="the batch id, or `doc:{document_id}`")
    status: str = Field(
        description="ENQUEUED, PENDING (running), SUCCESS, ERROR, CANCELLED, "
        "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
    )
    executor_id: str | None = Field(description="the worker process that ran it last")
    attempts: int = Field(description="how many times it was started (resumes included)")
    created_at: datetime | None
    completed_at: datetime | None
    error: str | None
    steps: list[StepRead]


class DocumentHistory(BaseModel):
    """A document's status and its execution (null until processing starts)."""

    document_id: str
    batch_id: str
    name: str
    status: str
    error_code: str | None
    error_reason: str | None
    execution: ExecutionRead | None


class BatchHistory(BaseModel):
    """A batch's status, its own execution (`batch.begin`), its completion (`batch.complete`,
    once its last document is done), and every document's execution."""

    batch_id: str
    status: str
    execution: ExecutionRead | None
    completion: ExecutionRead | None
    documents: list[DocumentHistory]
