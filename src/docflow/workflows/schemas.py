"""Extraction workflow requests and answers.

A request body is an `ExtractionWorkflowDefinition`. `WorkflowDefinitionIn` moves the two
cross-field rules of the definition (unique field names, `confidence_threshold <=
review_threshold`) onto the field they concern, so a 422 names `fields` or `review_threshold`
instead of the whole body.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from docflow.extraction.definition import (
    FIELD_NAME,
    MAX_FIELDS,
    SCALAR_TYPES,
    Box,
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
    Label,
)
from docflow.kit.inputs import PositiveInt32
from docflow.workflows.accuracy import MAX_CHANGED_DOCUMENTS, Evaluation


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
    version_created_at: datetime = Field(description="when this version was published")
    published_by: str | None = Field(
        description="who published this version: `console <email>` (the console), the API "
        "key's id (the API), `operator` (the command line); null for versions published "
        "before this was recorded"
    )


class WorkflowList(BaseModel):
    """A page of workflows, most recently updated first."""

    items: list[WorkflowRead]
    next_cursor: str | None


class CanvasBox(BaseModel):
    """A field's box on the template canvas: its name and type, and its template region (a
    page, a box, and optionally the anchor word it moves with and where that word sat)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=FIELD_NAME)
    type: FieldType = FieldType.STRING
    page: PositiveInt32 = 1
    box: Box
    anchor: Label | None = Field(default=None, min_length=1)
    anchor_box: Box | None = Field(default=None, validate_default=True)

    @field_validator("type")
    @classmethod
    def _scalar(cls, value: FieldType) -> FieldType:
        if value not in SCALAR_TYPES:
            raise ValueError("a box holds a single value: not line_items")
        return value

    @field_validator("anchor_box")
    @classmethod
    def _anchor_complete(cls, anchor_box: Box | None, info: ValidationInfo) -> Box | None:
        if (info.data.get("anchor") is None) != (anchor_box is None):
            raise ValueError("anchor and anchor_box go together")
        return anchor_box


class CanvasBoxes(BaseModel):
    """The boxes of a canvas, one per field (names unique)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    boxes: list[CanvasBox] = Field(max_length=MAX_FIELDS)

    @field_validator("boxes")
    @classmethod
    def _one_per_field(cls, boxes: list[CanvasBox]) -> list[CanvasBox]:
        names = [b.name for b in boxes]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"one box per field: {', '.join(duplicates)} has more")
        return boxes


class CanvasPreviewIn(CanvasBoxes):
    """What the canvas asks to preview: its boxes on one of the tenant's documents."""

    document_id: str = Field(min_length=1, max_length=40)
    boxes: list[CanvasBox] = Field(min_length=1, max_length=MAX_FIELDS)


class WorkflowEvaluationIn(WorkflowDefinitionIn):
    """A candidate definition to measure, and the version to measure it against."""

    against_version: PositiveInt32 | None = Field(
        default=None, description="the version to compare with; default the current one"
    )

    def as_definition(self) -> ExtractionWorkflowDefinition:
        return ExtractionWorkflowDefinition.model_validate(
            self.model_dump(exclude={"against_version"})
        )


def _accuracy(correct: int, labelled: int) -> float | None:
    return round(correct / labelled, 4) if labelled else None


def _delta(current: float | None, candidate: float | None) -> float | None:
    return None if current is None or candidate is None else round(candidate - current, 4)


class FieldAccuracy(BaseModel):
    """One field on the reviewed documents where it is labelled: how often each version gets
    it right (`corrected`: how many of those labels a reviewer corrected)."""

    field: str
    labelled: int
    corrected: int
    current_correct: int
    candidate_correct: int
    current_accuracy: float | None
    candidate_accuracy: float | None
    delta: float | None


class OverallAccuracy(BaseModel):
    """All labelled fields of all documents together."""

    labelled: int
    current_correct: int
    candidate_correct: int
    current_accuracy: float | None
    candidate_accuracy: float | None
    delta: float | None


class FieldVerdict(BaseModel):
    field: str
    expected: str
    current: str | None
    candidate: str | None
    verdict: Literal["fixed", "broken"]


class DocumentChange(BaseModel):
    """A document on which some field's verdict differs between the two versions."""

    document_id: str
    name: str
    fields: list[FieldVerdict]


class SkippedDocument(BaseModel):
    """A reviewed document left out: `file_missing` or `time_budget`."""

    document_id: str
    reason: str


class WorkflowEvaluation(BaseModel):
    """The current version (or `against_version`) and the candidate side by side, on the
    workflow's most recently reviewed documents."""

    workflow_id: str
    current_version: int
    documents: int
    complete: bool
    note: str | None
    fields: list[FieldAccuracy]
    overall: OverallAccuracy
    regressions: list[str]
    changed_documents: int
    changes: list[DocumentChange]  # the first MAX_CHANGED_DOCUMENTS of them
    skipped: list[SkippedDocument]

    @classmethod
    def of(cls, evaluation: Evaluation) -> WorkflowEvaluation:
        fields = [
            FieldAccuracy(
                field=f.field,
                labelled=f.labelled,
                corrected=f.corrected,
                current_correct=f.current_correct,
                candidate_correct=f.candidate_correct,
                current_accuracy=_accuracy(f.current_correct, f.labelled),
                candidate_accuracy=_accuracy(f.candidate_correct, f.labelled),
                delta=_delta(
                    _accuracy(f.current_correct, f.labelled),
                    _accuracy(f.candidate_correct, f.labelled),
                ),
            )
            for f in evaluation.fields
        ]
        labelled = sum(f.labelled for f in evaluation.fields)
        current = sum(f.current_correct for f in evaluation.fields)
        candidate = sum(f.candidate_correct for f in evaluation.fields)
        overall = OverallAccuracy(
            labelled=labelled,
            current_correct=current,
            candidate_correct=candidate,
            current_accuracy=_accuracy(current, labelled),
            candidate_accuracy=_accuracy(candidate, labelled),
            delta=_delta(_accuracy(current, labelled), _accuracy(candidate, labelled)),
        )
        changed = [
            DocumentChange(
                document_id=d.document_id,
                name=d.name,
                fields=[
                    FieldVerdict(
                        field=v.field,
                        expected=v.expected,
                        current=v.current,
                        candidate=v.candidate,
                        verdict="fixed" if v.fixed else "broken",
                    )
                    for v in d.fields
                ],
            )
            for d in evaluation.changed[:MAX_CHANGED_DOCUMENTS]
        ]
        return cls(
            workflow_id=evaluation.workflow_id,
            current_version=evaluation.current_version,
            documents=evaluation.documents,
            complete=not any(s.reason == "time_budget" for s in evaluation.skipped),
            note=evaluation.note,
            fields=fields,
            overall=overall,
            regressions=evaluation.regressions,
            changed_documents=len(evaluation.changed),
            changes=changed,
            skipped=[
                SkippedDocument(document_id=s.document_id, reason=s.reason)
                for s in evaluation.skipped
            ],
        )
