"""Documents through the real database: a batch's documents by status, the review queue,
compare-and-set updates and tenant isolation."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from docflow.documents import service
from docflow.documents.repository import DocumentRepository
from docflow.errors import InvalidInput, NotFound
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext
from support.db_fixtures import make_batch


def _set_status(session: Session, tenant: TenantContext, document_id: str, status: str) -> None:
    repo = DocumentRepository(session, tenant.tenant_id)
    document = repo.get(document_id)
    assert document is not None
    won = repo.compare_and_set(
        document_id, expected_version=document.version, status=status, updated_at=utcnow()
    )
    assert won
    session.expire(document)


def test_list_a_batchs_documents_by_status(session: Session, tenant_a: TenantContext) -> None:
    batch = make_batch(session, tenant_a, 6)
    ids = [d.id for d in batch.documents]
    _set_status(session, tenant_a, ids[1], "FAILED")
    _set_status(session, tenant_a, ids[3], "SUCCEEDED")
    _set_status(session, tenant_a, ids[4], "REVIEW_REQUIRED")

    def listed(status: str | None, limit: int = 2) -> list[str]:
        seen, cursor = [], None
        while True:
            page = service.list_documents(
                session, tenant_a, batch_id=batch.id, status=status, cursor=cursor, limit=limit
            )
            seen += [d.id for d in page.items]
            if page.next_cursor is None:
                return seen
            cursor = page.next_cursor

    assert listed(None) == ids
    assert listed("FAILED") == [ids[1]]
    assert listed("SUCCEEDED") == [ids[3]]
    assert listed("PENDING_UPLOAD") == [ids[0], ids[2], ids[5]]
    with pytest.raises(InvalidInput):
        listed("LOST")


def test_review_queue_lists_the_tenants_documents_needing_review(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    first, second = make_batch(session, tenant_a, 2), make_batch(session, tenant_b, 2)
    _set_status(session, tenant_a, first.documents[1].id, "REVIEW_REQUIRED")
    _set_status(session, tenant_b, second.documents[0].id, "REVIEW_REQUIRED")
    page = service.list_documents_by_status(
        session, tenant_a, status="REVIEW_REQUIRED", cursor=None, limit=10
    )
    assert [d.id for d in page.items] == [first.documents[1].id]
    with pytest.raises(InvalidInput):
        service.list_documents_by_status(
            session, tenant_a, status="SUCCEEDED", cursor=None, limit=10
        )


def test_compare_and_set_lets_only_the_first_writer_win(
    session: Session, tenant_a: TenantContext
) -> None:
    document = make_batch(session, tenant_a, 1).documents[0]
    repo = DocumentRepository(session, tenant_a.tenant_id)
    assert repo.compare_and_set(document.id, expected_version=1, status="UPLOADED")
    assert not repo.compare_and_set(document.id, expected_version=1, status="FAILED")
    session.expire(document)
    fetched = service.get_document(session, tenant_a, document_id=document.id)
    assert (fetched.status, fetched.version) == ("UPLOADED", 2)


def test_another_tenants_documents_are_not_found(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    batch = make_batch(session, tenant_a, 1)
    with pytest.raises(NotFound):
        service.get_document(session, tenant_b, document_id=batch.documents[0].id)
    with pytest.raises(NotFound):
        service.list_documents(
            session, tenant_b, batch_id=batch.id, status=None, cursor=None, limit=10
        )
    assert not DocumentRepository(session, tenant_b.tenant_id).compare_and_set(
        batch.documents[0].id, expected_version=1, status="FAILED"
    )
