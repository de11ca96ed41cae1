"""Document answers."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field


class DownstreamState(StrEnum):
    READY = "READY"
    PENDING = "PENDING"
    DEGRADED = "DEGRADED"
    # A projection the document owes nothing yet (it is still in flight).
    NOT_APPLICABLE = "NOT_APPLICABLE"


class ProjectionRead(BaseModel):
    """One projection of a document: whether it holds the document's current version."""

    state: DownstreamState
    version: int | None = Field(description="the document version the projection holds")


class Downstream(BaseModel):
    """Whether what is built from a document's events holds the document as it is now: READY
    when every required projection (search) does; PENDING while one has not caught up within
    `downstream_lag_seconds` of the document's last change; DEGRADED past that."""

    state: DownstreamState = Field(description="READY, PENDING or DEGRADED")
    projections: dict[str, ProjectionRead]
    lagging: list[str] = Field(description="the projections not yet holding the document")


class DocumentRead(BaseModel):
    """A document of a batch: what was declared, what landed, and where processing stands."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    batch_id: str
    project_id: str | None
    workflow_id: str | None
    name: str
    content_type: str = Field(description="as declared when the batch was created")
    declared_size: int
    size: int | None = Field(description="bytes stored, once uploaded")
    sha256: str | None
    detected_type: str | None = Field(description="the type found in the file's bytes")
    status: str
    error_code: str | None
    error_reason: str | None
    confidence: float | None
    uploaded_at: datetime | None
    started_at: datetime | None
    completed_at: datetime | None
    reviewed_at: datetime | None = Field(
        description="when a person last approved or rejected the document"
    )
    qa_sample: bool = Field(
        default=False,
        description="sent to review as a quality-assurance sample although it would have "
        "SUCCEEDED (the workflow's `qa_sample_rate`)",
    )
    created_at: datetime
    updated_at: datetime
    source_document_id: str | None = Field(
        default=None,
        description="in a re-run: the uploaded document whose stored file this one processes",
    )
    downstream: Downstream | None = Field(
        default=None,
        description="where its projections stand (on the document reads; null elsewhere)",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reviewed(self) -> bool:
        """Whether a person approved or rejected the document (see `/reviews`)."""
        return self.reviewed_at is not None


class DocumentDetail(DocumentRead):
    """A document with its extraction result, once there is one."""

    result: dict[str, Any] | None = None


class DocumentList(BaseModel):
    """A page of documents."""

    items: list[DocumentRead]
    next_cursor: str | None


class WordRead(BaseModel):
    """A word as read on a page."""

    text: str
    box: list[float] = Field(
        description="[x0, y0, x1, y1], normalised to the page (0-1, origin top left), as the "
        "result's field boxes"
    )
    confidence: float = Field(description="0-1; a text-layer word is 1.0")


class PageWordsRead(BaseModel):
    """A page of a document with the words read on it, in reading order."""

    page: int = Field(description="1-based")
    width: float = Field(description="in points for a PDF page, pixels for an image")
    height: float
    engine: str = Field(
        description="what read the page: `text_layer` (a PDF's text), else the OCR tier "
        "(`tesseract`, `ppocr`)"
    )
    words: list[WordRead]


class DocumentWords(BaseModel):
    """Some of a document's pages with their words; pass `next_cursor` for the next ones."""

    document_id: str
    pages: list[PageWordsRead]
    next_cursor: str | None


class UploadTargetRead(BaseModel):
    """How to upload one document's file before `expires_at`. `PUT` (local storage): send its
    bytes to `url` with `headers`. `POST` (S3): send `url` a multipart/form-data body holding
    every one of `fields`, then the file as the last part, named `file`; S3 refuses a file of
    another size than declared."""

    model_config = ConfigDict(from_attributes=True)

    url: str = Field(description="this API's own signed upload URL, or the S3 bucket's URL")
    method: Literal["PUT", "POST"]
    headers: dict[str, str] = Field(
        description="send exactly these: the Content-Type is part of the signature (PUT)"
    )
    fields: dict[str, str] | None = Field(
        default=None,
        description="POST only: the form fields to send before the file (the key, the "
        "Content-Type and the signed policy), each exactly as given",
    )
    expires_at: datetime = Field(
        description="after this time the URL is refused: ask POST "
        "/v1/documents/{document_id}/upload-url for a new one; never after the batch's "
        "upload deadline"
    )


class DocumentUpload(BaseModel):
    """Where to upload one declared document."""

    id: str
    name: str
    content_type: str
    declared_size: int
    upload_url: str | None = Field(
        description="where to send the file (the same as `upload.url`; how: `upload.method`); "
        "null when this server hands out none"
    )
    upload: UploadTargetRead
