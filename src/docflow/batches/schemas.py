"""Batch requests and answers."""

from __future__ import annotations

from datetime import datetime

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
    scheduled_for: datetime | None
    upload_deadline: datetime
    started_at: datetime | None
    completed_at: datetime | None
    created_at: datetime
    updated_at: datetime


class BatchList(BaseModel):
    """A page of batches, newest first."""

    items: list[BatchRead]
    next_cursor: str | None


class BatchAccepted(BatchRead):
    """The answer to a new batch: the batch, its documents' upload targets, its status URL."""

    documents: list[DocumentUpload]
    status_url: str
