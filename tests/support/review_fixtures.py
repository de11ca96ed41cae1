"""Documents awaiting review, made through the real repositories: a batch whose documents
reached their outcome (some REVIEW_REQUIRED with a weak `total`), counted in the batch, and the
batch completed, as the pipeline leaves them."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy.orm import Session

from docflow.batches.models import Batch, BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.documents.repository import DocumentRepository
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext
from support.db_fixtures import make_batch


def extraction_result(total: str | None = "12.5O", confidence: float = 0.6) -> dict[str, Any]:
    """An engine result whose `total` was read weakly (the reason names it)."""
    return {
        "status": "REVIEW_REQUIRED",
        "confidence": confidence,
        "fields": {
            "invoice_number": {
                "name": "invoice_number",
                "value": "INV-1",
                "raw": "INV-1",
                "confidence": 0.97,
                "errors": [],
            },
            "total": {
                "name": "total",
                "value": None,
                "raw": total,
                "confidence": confidence,
                "errors": ["not a number"],
            },
        },
        "reasons": [f"total: confidence {confidence:.2f} below 0.80; not a number"],
    }


def reviewable_batch(
    session: Session, tenant: TenantContext, *, review: int = 2, succeeded: int = 0
) -> Batch:
    """A completed batch: `review` documents REVIEW_REQUIRED, then `succeeded` SUCCEEDED, in
    its counters and status (REVIEW_REQUIRED, or SUCCEEDED when none needs review)."""
    batch = make_batch(session, tenant, review + succeeded, project=secrets.token_hex(4))
    documents = DocumentRepository(session, tenant.tenant_id)
    now = utcnow()
    for i, document in enumerate(batch.documents):
        status = "REVIEW_REQUIRED" if i < review else "SUCCEEDED"
        result = extraction_result() if i < review else {"fields": {}, "reasons": []}
        assert documents.compare_and_set(
            document.id,
            expected_version=document.version,
            status=status,
            result=result,
            confidence=0.6 if i < review else 0.95,
            started_at=now,
            completed_at=now,
            updated_at=now,
        )
        session.expire(document)
    batches = BatchRepository(session, tenant.tenant_id)
    assert batches.compare_and_set(
        batch.id,
        expected_version=batch.version,
        status=(BatchStatus.REVIEW_REQUIRED if review else BatchStatus.SUCCEEDED).value,
        uploaded_count=review + succeeded,
        review_count=review,
        succeeded_count=succeeded,
        started_at=now,
        completed_at=now,
    )
    session.flush()
    session.expire(batch)
    return batch
