"""Earned trust as the API shows it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class FieldTrustRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    examples: int = Field(description="reviewed values of this field in this version")
    correct: int = Field(description="of those, the ones the reviewer left as they were")
    cut: float | None = Field(
        description="the confidence from which a value passes without review; null: every "
        "value goes to review (or, `decided_by: thresholds`, by review_threshold)"
    )
    precision: float | None = Field(description="share right of the examples at or above the cut")
    lower_bound: float | None = Field(
        description="the conservative (Wilson, shrunk toward the global calibration) lower "
        "bound of that precision, at least target_precision"
    )
    automation_rate: float = Field(description="share of the examples at or above the cut")
    decided_by: Literal["trusted", "review", "thresholds"]
    drifted_at: datetime | None = Field(
        description="when the precision at the field's cut last fell below the target"
    )


class WorkflowTrust(BaseModel):
    """How far each field of a workflow version is trusted, from its reviewed documents."""

    model_config = ConfigDict(from_attributes=True)

    workflow_id: str
    version: int
    target_precision: float
    qa_sample_rate: float
    cold_start: Literal["review", "thresholds"]
    learning: bool = Field(description="DOCFLOW_LEARNING of the installation")
    fields: list[FieldTrustRead]
