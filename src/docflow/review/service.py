"""Use cases of human review: claiming a document (a lease, so two reviewers never work on one
document), the queue of documents awaiting review, approving or rejecting a document with
corrected field values, and the audit trail of every review.

A document may be reviewed while it awaits review (REVIEW_REQUIRED) and again once reviewed
(re-review; audited the same way). Every change needs the caller's active claim: a claim lasts
`lease_seconds` from when it was taken (or renewed by claiming again) and expires by itself, as
its end is compared with the time at each read. Every claim change and review first locks the
document's row, so they serialise per document on both engines.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session

from docflow.documents.models import Document, DocumentStatus
from docflow.documents.outcome import Revision, batch_facts, revise_outcome
from docflow.documents.service import document_result, get_document, get_fresh
from docflow.errors import InvalidInput
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef, FieldType
from docflow.extraction.fields import parse_value
from docflow.kit import ids
from docflow.kit.pagination import Page
from docflow.review.claims import check_claim, locked
from docflow.review.events import Reviewed, document_reviewed
from docflow.review.models import Decision, DocumentReview, DocumentReviewField
from docflow.review.repository import ReviewRepository
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

REJECTED_IN_REVIEW = "rejected_in_review"
MAX_REASON = 2000
MAX_VALUE = 2000


@dataclass(frozen=True, slots=True)
class ReviewInput:
    """What a reviewer sends: corrected values by field name, the decision and why."""

    fields: Mapping[str, str | None]
    decision: str
    reason: str = ""


def _parse_field(
    definition: ExtractionWorkflowDefinition, field: FieldDef, raw: str | None
) -> str | None:
    name = f"fields.{field.name}"
    if field.type == FieldType.LINE_ITEMS:
        raise InvalidInput("line-item tables are not corrected by review", field=name)
    if raw is None or not raw.strip():
        return None
    if len(raw) > MAX_VALUE:
        raise InvalidInput(f"a value holds at most {MAX_VALUE} characters", field=name)
    parsed = parse_value(
        field.type,
        raw,
        date_order=definition.date_order,
        enum_values=field.enum_values,
        pattern=field.pattern,
    )
    if not parsed.ok:
        raise InvalidInput(f"{parsed.error} (a {field.type.value} field)", field=name)
    return parsed.value


def check_input(
    definition: ExtractionWorkflowDefinition, review: ReviewInput
) -> dict[str, str | None]:
    """The corrected values, each parsed as its field's type (normalised); InvalidInput naming
    `fields.<name>`, `decision` or `reason` otherwise."""
    if review.decision not in {d.value for d in Decision}:
        raise InvalidInput("decision must be approve or reject", field="decision")
    if len(review.reason) > MAX_REASON:
        raise InvalidInput(f"a reason holds at most {MAX_REASON} characters", field="reason")
    if review.decision == Decision.REJECT and not review.reason.strip():
        raise InvalidInput("say why the document is rejected", field="reason")
    declared = {f.name: f for f in definition.fields}
    values: dict[str, str | None] = {}
    for name, raw in review.fields.items():
        field = declared.get(name)
        if field is None:
            raise InvalidInput("the workflow has no such field", field=f"fields.{name}")
        values[name] = _parse_field(definition, field, raw)
    return values


def _changes(
    result: dict[str, Any] | None, values: Mapping[str, str | None]
) -> dict[str, str | None]:
    """The `values` that differ from the result's: one sent as it stands (after parsing) is no
    correction, so it is neither rewritten nor audited."""
    fields = (result or {}).get("fields") or {}
    return {
        name: value
        for name, value in values.items()
        if value != (fields.get(name) or {}).get("value")
    }


def _corrected(
    result: dict[str, Any] | None, values: Mapping[str, str | None]
) -> tuple[dict[str, Any], list[tuple[str, str | None, float | None]]]:
    """The result with `values` in place (confidence 1, marked reviewed) and, per changed
    field, (name, original value, original confidence)."""
    corrected = copy.deepcopy(result) if result is not None else {}
    fields: dict[str, Any] = corrected.setdefault("fields", {})
    originals = []
    for name, value in values.items():
        before = fields.get(name) or {}
        originals.append((name, before.get("value"), before.get("confidence")))
        fields[name] = {
            **{"name": name, "raw": None, "errors": []},
            **before,
            "value": value,
            "confidence": 1.0,
            "reviewed": True,
        }
    corrected["reviewed"] = True
    return corrected, originals


def _missing_required(definition: ExtractionWorkflowDefinition, result: dict[str, Any]) -> None:
    fields = result.get("fields") or {}
    for field in definition.fields:
        value = (fields.get(field.name) or {}).get("value")
        if field.required and field.type != FieldType.LINE_ITEMS and value is None:
            raise InvalidInput(
                "a required field needs a value before the document is approved",
                field=f"fields.{field.name}",
            )


@dataclass(frozen=True, slots=True)
class Recorded:
    """A review as recorded, with its corrected fields, and the document's new status."""

    review: DocumentReview
    fields: list[DocumentReviewField]


def review_document(
    session: Session,
    tenant: TenantContext,
    storage: Storage,
    *,
    document_id: str,
    reviewer: str,
    review: ReviewInput,
    now: datetime,
    max_result_bytes: int,
) -> Recorded:
    """Approve (SUCCEEDED) or reject (FAILED `rejected_in_review`) a document under the
    caller's claim, with corrected values, in one transaction: the document's status and
    result (corrected values in place), its batch's counts and status, the audit rows and
    the `document.reviewed` event; the claim is released. A value equal to the stored one
    (once parsed) is no correction: the field stays as it was and is not audited. NotFound
    for another tenant's document; 409 `not_in_review`, `claim_required`, `claimed_by_other`,
    `claim_expired`; 422 naming the field whose value does not parse as its type."""
    document = locked(session, tenant, document_id)
    repo = ReviewRepository(session, tenant.tenant_id)
    check_claim(repo, document_id, reviewer, now)
    facts = batch_facts(session, tenant.tenant_id, document.batch_id)
    stored = document_result(storage, document, max_bytes=max_result_bytes)
    values = _changes(stored, check_input(facts.definition, review))
    result, originals = _corrected(stored, values)
    approve = review.decision == Decision.APPROVE
    if approve:
        _missing_required(facts.definition, result)
    revision = Revision(
        status=(DocumentStatus.SUCCEEDED if approve else DocumentStatus.FAILED).value,
        error_code=None if approve else REJECTED_IN_REVIEW,
        reason=None if approve else review.reason.strip(),
        result=result,
    )
    before = document.status
    version = revise_outcome(session, tenant, document, revision, now=now)
    recorded = _audit(repo, document_id, reviewer, review, before, revision, values, originals, now)
    repo.drop_claim(document_id)
    document_reviewed(
        session,
        Reviewed(
            tenant_id=tenant.tenant_id,
            project_id=facts.project_id,
            batch_id=document.batch_id,
            document_id=document_id,
            workflow_id=facts.workflow_id,
            workflow_version=facts.workflow_version,
            review_id=recorded.review.id,
            decision=review.decision,
            status=revision.status,
            error_code=revision.error_code,
            reviewer=reviewer,
            corrected_fields=tuple(values),
            version=version,
        ),
    )
    log.info(
        "review.recorded",
        tenant_id=tenant.tenant_id,
        document_id=document_id,
        decision=review.decision,
        fields=len(values),
    )
    return recorded


def _audit(
    repo: ReviewRepository,
    document_id: str,
    reviewer: str,
    review: ReviewInput,
    before: str,
    revision: Revision,
    values: Mapping[str, str | None],
    originals: list[tuple[str, str | None, float | None]],
    now: datetime,
) -> Recorded:
    row = DocumentReview(
        tenant_id=repo.tenant_id,
        id=ids.new_id(ids.REVIEW),
        document_id=document_id,
        decision=review.decision,
        reason=review.reason.strip(),
        reviewer=reviewer,
        status_before=before,
        status_after=revision.status,
        created_at=now,
    )
    fields = [
        DocumentReviewField(
            tenant_id=repo.tenant_id,
            review_id=row.id,
            field=name,
            original_value=value,
            original_confidence=confidence,
            corrected_value=values[name],
        )
        for name, value, confidence in originals
    ]
    repo.add_review(row, fields)
    return Recorded(row, fields)


def list_reviews(
    session: Session, tenant: TenantContext, *, document_id: str, cursor: str | None, limit: int
) -> Page[Recorded]:
    """A document's reviews, oldest first, each with its corrected fields. NotFound for a
    missing id or another tenant's."""
    get_document(session, tenant, document_id=document_id)
    repo = ReviewRepository(session, tenant.tenant_id)
    page = repo.page_reviews(document_id, cursor=cursor, limit=limit)
    by_review: dict[str, list[DocumentReviewField]] = {r.id: [] for r in page.items}
    for field in repo.fields_of(list(by_review)):
        by_review[field.review_id].append(field)
    return page.map(lambda r: Recorded(r, by_review[r.id]))


def get_reviewed(session: Session, tenant: TenantContext, *, document_id: str) -> Document:
    """The document as a review just left it (read afresh)."""
    return get_fresh(session, tenant, document_id=document_id)
