"""Batch requests and answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from docflow.documents.schemas import DocumentUpload
from docflow.kit.inputs import NonNegativeInt64, PositiveInt32, Timestamp


class DocumentDeclaration(BaseModel):
    """A document the client is about to upload."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=255, description="file name, with its extension")
    content_type: str = Field(
        min_length=3,
        max_length=127,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$",
        description="MIME type, e.g. application/pdf; the real type is read from the bytes",
    )
    size: NonNegativeInt64 = Field(description="size in bytes; the upload may not exceed it")


class BatchCreate(BaseModel):
    """A new batch: which workflow to run and the documents that will be uploaded."""

    model_config = ConfigDict(extra="forbid")

    project_id: str = Field(min_length=1)
    workflow_id: str = Field(min_length=1)
    workflow_version: PositiveInt32 | None = Field(default=None, description="default: the latest")
    documents: list[DocumentDeclaration] = Field(min_length=1)
    scheduled_for: Timestamp | None = Field(
        default=None, description="start processing at this time rather than when all uploads land"
    )


class BatchRead(BaseModel):
    """A batch and its counters."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    project_id: str
    workflow_id: str
    workflow_version: int
    status: str
    document_count: int
    uploaded_count: int
    succeeded_count: int
    review_count: int
    failed_count: int
    cancelled_count: int = Field(
        default=0, description="documents ended CANCELLED by the batch's cancellation"
    )
    scheduled_for: datetime | None
    upload_deadline: datetime
    started_at: datetime | None
    completed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    rerun_of: str | None = Field(
        default=None, description="the batch this one re-runs; null for an uploaded batch"
    )


class BatchList(BaseModel):
    """A page of batches, newest first."""

    items: list[BatchRead]
    next_cursor: str | None


class BatchAccepted(BatchRead):
    """The answer to a new batch: the batch, its documents' upload targets, its status URL."""

    documents: list[DocumentUpload]
    status_url: str


class RerunCreate(BaseModel):
    """Re-run a batch's stored files against a version of its workflow."""

    model_config = ConfigDict(extra="forbid")

    workflow_version: PositiveInt32 | None = Field(
        default=None, description="a version of the batch's workflow; default: its current one"
    )


class RerunDocument(BaseModel):
    """A document of the re-run and the upload it processes again."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    source_document_id: str = Field(description="the uploaded document whose file it re-runs")


class RerunSkipped(BaseModel):
    """A document of the original batch left out: its file never landed."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    status: str
    error_code: str | None


class BatchRerunAccepted(BatchRead):
    """The answer to a re-run: the new batch (already started), its documents, the original
    documents it left out, its status URL."""

    documents: list[RerunDocument]
    skipped: list[RerunSkipped] = Field(
        description="documents of the original batch whose file never landed (not re-run)"
    )
    status_url: str


class FieldDiffRead(BaseModel):
    """One field (or line-items table, `kind` "line_items", values are its rows) before
    (`against`) and after (this batch)."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    kind: Literal["field", "line_items"]
    value_before: Any
    value_after: Any
    confidence_before: float | None
    confidence_after: float | None
    changed: bool = Field(description="the value differs (or the field is on one side only)")
    confidence: Literal["improved", "worsened", "unchanged"] | None = Field(
        description="how the confidence moved; null when a side has no confidence"
    )


class DocumentDiffRead(BaseModel):
    """One upload as `against` and this batch ran it (a side is null when that batch did not
    run it)."""

    model_config = ConfigDict(from_attributes=True)

    source_document_id: str = Field(description="the uploaded document both runs process")
    name: str
    document_id: str | None = Field(description="the document in this batch")
    against_document_id: str | None = Field(description="the document in `against`")
    status_before: str | None
    status_after: str | None
    error_code_before: str | None
    error_code_after: str | None
    confidence_before: float | None
    confidence_after: float | None
    status_changed: bool
    changed: bool = Field(description="the status or any field value differs")
    fields: list[FieldDiffRead]


class DiffSummaryRead(BaseModel):
    """Counts over the whole comparison (both batches, every document)."""

    model_config = ConfigDict(from_attributes=True)

    documents: int = Field(description="uploads run by either batch")
    matched: int = Field(description="uploads run by both")
    only_in_batch: int
    only_in_against: int
    documents_changed: int
    statuses_changed: int
    fields_compared: int
    fields_changed: int
    confidence_improved: int
    confidence_worsened: int


class BatchDiffRead(BaseModel):
    """What changed from `against` (before) to this batch (after): a page of this batch's
    documents; the summary on the first page only."""

    batch_id: str
    against: str
    summary: DiffSummaryRead | None = Field(
        description="the whole comparison's counts; on the first page (no cursor) only"
    )
    items: list[DocumentDiffRead]
    next_cursor: str | None
