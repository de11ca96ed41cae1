"""Search answers."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SearchHit(BaseModel):
    """One matching document: its entry in the index (the document as of `version`) and, when
    the search has words, `highlight`: a passage of the document with each matched word in
    `<mark>`...`</mark>` (the passage is the document's text, not HTML-escaped)."""

    model_config = ConfigDict(from_attributes=True)

    document_id: str
    project_id: str | None
    batch_id: str
    workflow_id: str | None
    name: str
    status: str
    confidence: float | None
    version: int
    fields: dict[str, Any] = Field(description="field name -> normalised value (null: not found)")
    highlight: str | None
    link: str


class SearchList(BaseModel):
    """A page of matches, newest document first."""

    items: list[SearchHit]
    next_cursor: str | None
