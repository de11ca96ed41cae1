"""A reviewed document as examples of its workflow version: per field, the confidence the
engine gave the value and whether the reviewer left it as it was.

Rebuilt from the document as it stands and its review trail each time it is reviewed, so a
re-review replaces its examples and a replay changes nothing. A document that stands approved
(SUCCEEDED after a review) gives one example per scalar field the engine read a value for: the
value and confidence of a field a review named are those the first such review found (later
reviews see the reviewed value), and the example is right when the value now is the same; a
field no review named was approved as extracted. A rejected document gives none (a rejection
says the document is wrong, not what its values are), nor does a field the engine found no
value for (there is no confidence to judge) or a line-item table (review does not correct it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from docflow.documents.models import Document, DocumentStatus
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.review.examples import first_readings
from docflow.tenancy import TenantContext
from docflow.trust.models import FieldEvidence
from docflow.trust.repository import TrustRepository


def _examples(
    definition: ExtractionWorkflowDefinition,
    result: dict[str, Any] | None,
    first: dict[str, tuple[str | None, float | None]],
) -> list[tuple[str, float, bool]]:
    fields = (result or {}).get("fields") or {}
    examples = []
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            continue
        now = fields.get(field.name)
        value = now.get("value") if isinstance(now, dict) else None
        if field.name in first:
            original, confidence = first[field.name]
        else:
            original = value
            confidence = now.get("confidence") if isinstance(now, dict) else None
        if original is None or not isinstance(confidence, int | float):
            continue
        examples.append((field.name, float(confidence), original == value))
    return examples


def record_evidence(
    session: Session,
    tenant: TenantContext,
    *,
    document: Document,
    result: dict[str, Any] | None,
    definition: ExtractionWorkflowDefinition,
    workflow_version: int,
) -> set[str]:
    """Replace the document's examples (see the module docstring); the fields it has examples
    of now or had before, which are the fields whose estimate may have changed."""
    repo = TrustRepository(session, tenant.tenant_id)
    approved = document.status == DocumentStatus.SUCCEEDED and document.reviewed_at is not None
    examples: list[tuple[str, float, bool]] = []
    if approved and document.workflow_id is not None:
        first = first_readings(session, tenant, document_id=document.id)
        examples = _examples(definition, result, first)
    reviewed_at: datetime = document.reviewed_at or document.updated_at
    rows = [
        FieldEvidence(
            tenant_id=tenant.tenant_id,
            document_id=document.id,
            field=name,
            workflow_id=document.workflow_id,
            workflow_version=workflow_version,
            confidence=confidence,
            correct=correct,
            reviewed_at=reviewed_at,
        )
        for name, confidence, correct in examples
    ]
    repo.replace_evidence(document.id, rows)
    return {f.name for f in definition.fields if f.type != FieldType.LINE_ITEMS}
