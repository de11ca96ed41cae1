"""Deleting one document, at the service level: its batch loses it from its counters and gets
its status computed again as a review does (a batch that needed review only for it succeeds,
announced by `batch.completed`); a cancelled batch stays cancelled; a document of a batch still
running is refused (409 `batch_running`), another tenant's is not found. The HTTP path, with
events, deliveries, search entries and files, is in test_deletion_events.py."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from docflow.batches import lifecycle
from docflow.batches.lifecycle import BatchRunning
from docflow.batches.models import BatchStatus
from docflow.batches.repository import BatchRepository
from docflow.documents.models import DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.errors import NotFound
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.projects.repository import ProjectRepository
from docflow.tenancy import TenantContext
from support.db_fixtures import make_batch
from support.review_fixtures import reviewable_batch


def _types(session: Session, tenant: TenantContext, subject: str) -> list[str]:
    stmt = select(OutboxEvent.type).where(
        OutboxEvent.tenant_id == tenant.tenant_id, OutboxEvent.subject == subject
    )
    return list(session.scalars(stmt.order_by(OutboxEvent.id)))


def test_deleting_the_document_under_review_settles_its_batch(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    batch = reviewable_batch(session, tenant_a, review=1, succeeded=1)
    assert batch.status == BatchStatus.REVIEW_REQUIRED
    under_review, succeeded = batch.documents
    assert under_review.status == DocumentStatus.REVIEW_REQUIRED
    project = ProjectRepository(session, tenant_a.tenant_id).get(batch.project_id)
    assert project is not None
    documents_before = project.document_count
    with pytest.raises(NotFound):
        lifecycle.delete_document(session, tenant_b, document_id=under_review.id)

    lifecycle.delete_document(session, tenant_a, document_id=under_review.id)

    settled = BatchRepository(session, tenant_a.tenant_id).get(batch.id, fresh=True)
    assert settled is not None
    assert (settled.status, settled.document_count) == (BatchStatus.SUCCEEDED, 1)
    assert (settled.review_count, settled.succeeded_count) == (0, 1)
    assert _types(session, tenant_a, f"batches/{batch.id}") == [envelopes.BATCH_COMPLETED]
    assert _types(session, tenant_a, f"documents/{under_review.id}") == [envelopes.DOCUMENT_DELETED]
    documents = DocumentRepository(session, tenant_a.tenant_id)
    assert documents.get(under_review.id) is None and documents.get(succeeded.id) is not None
    session.refresh(project)
    assert project.document_count == documents_before - 1


def test_a_cancelled_batch_stays_cancelled_and_a_running_one_keeps_its_documents(
    session: Session, tenant_a: TenantContext
) -> None:
    waiting = make_batch(session, tenant_a, 2)
    first = waiting.documents[0].id
    with pytest.raises(BatchRunning) as refused:
        lifecycle.delete_document(session, tenant_a, document_id=first)
    assert (refused.value.code, refused.value.status) == ("batch_running", 409)
    assert DocumentRepository(session, tenant_a.tenant_id).get(first) is not None

    lifecycle.cancel_batch(session, tenant_a, batch_id=waiting.id)
    lifecycle.delete_document(session, tenant_a, document_id=first)
    cancelled = BatchRepository(session, tenant_a.tenant_id).get(waiting.id, fresh=True)
    assert cancelled is not None
    assert (cancelled.status, cancelled.document_count, cancelled.cancelled_count) == (
        BatchStatus.CANCELLED,
        1,
        1,
    )
