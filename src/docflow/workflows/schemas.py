"""Extraction workflow requests and answers.

A request body is an `ExtractionWorkflowDefinition`. `WorkflowDefinitionIn` moves the two
cross-field rules of the definition (unique field names, `confidence_threshold <=
review_threshold`) onto the field they concern, so a 422 names `fields` or `review_threshold`
instead of the whole body.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef


class WorkflowDefinitionIn(ExtractionWorkflowDefinition):
    """An extraction workflow definition, as sent to the API."""

    @field_validator("fields")
    @classmethod
    def _unique_names(cls, fields: list[FieldDef]) -> list[FieldDef]:
        names = [f.name for f in fields]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"field names must be unique: {', '.join(duplicates)}")
        return fields

    @field_validator("review_threshold")
    @classmethod
    def _thresholds_ordered(cls, review: float, info: ValidationInfo) -> float:
        confidence = info.data.get("confidence_threshold")
        if confidence is not None and confidence > review:
            raise ValueError(
                f"review_threshold ({review}) must not be below confidence_threshold ({confidence})"
            )
        return review

    def as_definition(self) -> ExtractionWorkflowDefinition:
        """The plain contract model, as services and the engine expect it."""
        return ExtractionWorkflowDefinition.model_validate(self.model_dump())


class WorkflowRead(BaseModel):
    """One version of an extraction workflow."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    project_id: str
    version: int
    name: str
    definition: ExtractionWorkflowDefinition
    created_at: datetime
    updated_at: datetime


class WorkflowList(BaseModel):
    """A page of workflows, most recently updated first."""

    items: list[WorkflowRead]
    next_cursor: str | None
