"""Reviewed documents as labelled examples of their workflow.

A review writes its corrected values into the document's result (confidence 1, `reviewed`),
so once a document stands approved its result holds, for every field, the value after its
latest review: the values a reviewer changed (`corrected`) and the ones they approved as
extracted or sent again unchanged (confirmed). That is the truth a workflow version is
measured against. A document whose latest review rejected it is FAILED and is no example (a
rejection says the document is wrong, not what its values are). A field without a value, and
a line-item table (review does not correct tables), is not labelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from docflow.documents.service import document_result
from docflow.review.repository import ReviewRepository
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext


@dataclass(frozen=True, slots=True)
class LabelledDocument:
    """One reviewed document: its stored file and the true value of each labelled field
    (`corrected`: the fields a review changed; the others were confirmed as extracted)."""

    document_id: str
    name: str
    storage_key: str | None
    reviewed_at: datetime | None
    truth: dict[str, str]
    corrected: frozenset[str]


def _truth(result: dict[str, Any] | None) -> dict[str, str]:
    fields = (result or {}).get("fields") or {}
    truth: dict[str, str] = {}
    for name, field in fields.items():
        value = field.get("value") if isinstance(field, dict) else None
        if isinstance(value, str) and value.strip():
            truth[name] = value
    return truth


def reviewed_documents(
    session: Session,
    tenant: TenantContext,
    storage: Storage,
    *,
    workflow_id: str,
    limit: int,
    max_result_bytes: int,
) -> list[LabelledDocument]:
    """The workflow's `limit` most recently reviewed documents that stand approved, each with
    its truth (see the module docstring), most recently reviewed first."""
    repo = ReviewRepository(session, tenant.tenant_id)
    documents = repo.recently_reviewed(workflow_id, limit=limit)
    corrected = repo.corrected_fields([d.id for d in documents])
    examples = []
    for document in documents:
        truth = _truth(document_result(storage, document, max_bytes=max_result_bytes))
        examples.append(
            LabelledDocument(
                document_id=document.id,
                name=document.name,
                storage_key=document.storage_key,
                reviewed_at=document.reviewed_at,
                truth=truth,
                corrected=frozenset(f for d, f in corrected if d == document.id and f in truth),
            )
        )
    return examples


def first_readings(
    session: Session, tenant: TenantContext, *, document_id: str
) -> dict[str, tuple[str | None, float | None]]:
    """Per field a review named, the value and confidence the engine gave it (as the document's
    first review that named the field found it: later reviews see the reviewed value)."""
    found: dict[str, tuple[str | None, float | None]] = {}
    for name, value, confidence in ReviewRepository(session, tenant.tenant_id).field_history(
        document_id
    ):
        found.setdefault(name, (value, confidence))
    return found
