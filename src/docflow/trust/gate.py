"""The earned-trust gate and quality-assurance sampling: whether a document the engine would
pass goes to review anyway. Pure: the caller reads the field cuts (`service.field_cuts`).

With learning on, a document whose static status (by the workflow's thresholds) is SUCCEEDED
or REVIEW_REQUIRED is decided per field instead (a field a language model alone read,
`needs_review`, always holds it): every scalar field with a value passes only
at or above its cut (`estimate`); a field with no cut goes to review, except under
`cold_start: thresholds` while it has fewer than `COLD_START_EXAMPLES` examples: then the
thresholds decide (a measured field still holds the document when it falls under its cut,
but the document passes only as the thresholds say). A required field without a value, or a
required line-item table under `review_threshold`, keeps the document in review; a FAILED
document stays FAILED. So the earned cut can pass a field the static threshold would hold
(below `review_threshold`) as well as hold one it would pass.

Then, learning or not, a SUCCEEDED document is a quality-assurance sample with probability
`qa_sample_rate`, drawn from its id (a repeat of the step draws the same).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docflow.extraction.definition import ColdStart, ExtractionWorkflowDefinition, FieldType
from docflow.extraction.result import DocumentStatus
from docflow.trust.estimate import COLD_START_EXAMPLES

QA_SAMPLE_REASON = "quality-assurance sample"


@dataclass(frozen=True, slots=True)
class FieldCut:
    """A field's cut (None: no confidence reaches the target) and its reviewed examples."""

    cut: float | None
    examples: int


@dataclass(frozen=True, slots=True)
class Gated:
    status: str
    reasons: tuple[str, ...]
    qa_sample: bool = False


DEFER = "defer"  # a field not yet measured under `cold_start: thresholds`


def _field_reason(
    definition: ExtractionWorkflowDefinition,
    name: str,
    required: bool,
    found: dict[str, Any] | None,
    cut: FieldCut | None,
) -> str | None:
    """Why the field holds the document in review; None when it passes; DEFER when the
    thresholds decide it (not measured yet under `cold_start: thresholds`)."""
    if (found or {}).get("needs_review") and (found or {}).get("value") is not None:
        # A value only a language model read waits for a person whatever the field earned.
        return f"{name}: a language model's value the engine did not read, held for review"
    examples = cut.examples if cut is not None else 0
    unmeasured = cut is None or (cut.cut is None and examples < COLD_START_EXAMPLES)
    if unmeasured and definition.cold_start == ColdStart.THRESHOLDS:
        return DEFER
    value = (found or {}).get("value")
    if value is None:
        return f"{name}: required field not found" if required else None
    confidence = float((found or {}).get("confidence") or 0.0)
    if cut is None or cut.cut is None:
        return (
            f"{name}: not yet trusted ({examples} reviewed, precision "
            f"{definition.target_precision:.2f} not reached)"
        )
    if confidence >= cut.cut:
        return None
    shown = math.floor(round(confidence * 10_000, 6)) / 10_000
    at = math.ceil(round(cut.cut * 10_000, 6)) / 10_000
    return f"{name}: confidence {shown:.4f} below its earned cut {at:.4f}"


def _table_held(definition: ExtractionWorkflowDefinition, fields: Mapping[str, Any]) -> bool:
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS and field.required:
            table = fields.get(field.name) or {}
            if float(table.get("confidence") or 0.0) < definition.review_threshold:
                return True
    return False


def gate(
    definition: ExtractionWorkflowDefinition,
    result: Mapping[str, Any],
    status: str,
    reasons: tuple[str, ...],
    cuts: Mapping[str, FieldCut],
) -> Gated:
    """The document's status and reasons by earned trust (see the module docstring), from
    its static `status` and `reasons` and its result's fields."""
    if status not in (DocumentStatus.SUCCEEDED, DocumentStatus.REVIEW_REQUIRED):
        return Gated(status, reasons)
    fields = result.get("fields") or {}
    if _table_held(definition, fields):
        return Gated(status, reasons)
    held = []
    deferred = False
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            continue
        found = fields.get(field.name)
        reason = _field_reason(
            definition,
            field.name,
            field.required,
            found if isinstance(found, dict) else None,
            cuts.get(field.name),
        )
        if reason == DEFER:
            deferred = True
        elif reason is not None:
            held.append(reason)
    if held:
        return Gated(DocumentStatus.REVIEW_REQUIRED.value, tuple(held))
    if deferred:  # the thresholds decide what was not measured yet
        return Gated(status, reasons)
    return Gated(DocumentStatus.SUCCEEDED.value, ())


def sampled(document_id: str, rate: float) -> bool:
    """Whether the document is a quality-assurance sample at `rate` (from its id alone)."""
    if rate <= 0:
        return False
    draw = int.from_bytes(hashlib.sha256(document_id.encode()).digest()[:8], "big") / 2**64
    return draw < rate


def qa_sample(definition: ExtractionWorkflowDefinition, gated: Gated, document_id: str) -> Gated:
    """`gated`, sent to review as a sample when it SUCCEEDED and the draw says so."""
    if gated.status != DocumentStatus.SUCCEEDED or not sampled(
        document_id, definition.qa_sample_rate
    ):
        return gated
    reason = f"{QA_SAMPLE_REASON} (qa_sample_rate {definition.qa_sample_rate:g})"
    return Gated(DocumentStatus.REVIEW_REQUIRED.value, (reason,), qa_sample=True)
