"""Batches through the real database: one-transaction creation, limits, listing, isolation."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy.orm import Session

from docflow.batches import service
from docflow.batches.models import BatchStatus
from docflow.batches.service import DocumentSpec
from docflow.errors import Conflict, InvalidInput, LimitExceeded, NotFound
from docflow.kit.clock import utcnow
from docflow.projects import service as projects
from docflow.tenancy import TenantContext
from docflow.workflows import service as workflows
from support.db_fixtures import sample_definition

LIMITS = {"max_documents": 5, "max_document_bytes": 1000}


def _setup(session: Session, tenant: TenantContext) -> tuple[str, str]:
    project = projects.create_project(session, tenant, name="AP")
    workflow = workflows.create_workflow(
        session, tenant, project_id=project.id, definition=sample_definition()
    )
    return project.id, workflow.id


def _create(
    session: Session, tenant: TenantContext, project_id: str, workflow_id: str, **kw: object
) -> service.Batch:
    args: dict[str, object] = {
        "documents": [DocumentSpec("a.pdf", "application/pdf", 10)],
        "scheduled_for": None,
        "upload_deadline": utcnow() + timedelta(hours=1),
        **LIMITS,
    }
    args.update(kw)
    return service.create_batch(
        session,
        tenant,
        project_id=project_id,
        workflow_id=workflow_id,
        **args,  # type: ignore[arg-type]
    )


def test_create_writes_batch_documents_and_counters(
    session: Session, tenant_a: TenantContext
) -> None:
    project_id, workflow_id = _setup(session, tenant_a)
    docs = [
        DocumentSpec("a.pdf", "application/pdf", 100),
        DocumentSpec("B.PNG", "image/png", 0),
        DocumentSpec("c.jpg", "image/jpeg", 1000),
    ]
    batch = _create(session, tenant_a, project_id, workflow_id, documents=docs)
    assert batch.id.startswith("bat_") and batch.status == BatchStatus.CREATED
    assert (batch.workflow_id, batch.workflow_version, batch.document_count) == (workflow_id, 1, 3)
    assert [d.name for d in batch.documents] == ["a.pdf", "B.PNG", "c.jpg"]
    assert {d.status for d in batch.documents} == {"PENDING_UPLOAD"}
    assert all(d.batch_id == batch.id and d.id.startswith("doc_") for d in batch.documents)

    _create(session, tenant_a, project_id, workflow_id)
    project = projects.get_project(session, tenant_a, project_id=project_id)
    session.refresh(project)
    assert (project.batch_count, project.document_count) == (2, 4)
    fetched = service.get_batch(session, tenant_a, batch_id=batch.id)
    assert fetched.id == batch.id and len(fetched.documents) == 3
    with pytest.raises(Conflict):
        projects.delete_project(session, tenant_a, project_id=project_id)


def test_batches_pin_the_workflow_version(session: Session, tenant_a: TenantContext) -> None:
    project_id, workflow_id = _setup(session, tenant_a)
    workflows.update_workflow(
        session, tenant_a, workflow_id=workflow_id, definition=sample_definition(review_threshold=1)
    )
    assert _create(session, tenant_a, project_id, workflow_id).workflow_version == 2
    pinned = _create(session, tenant_a, project_id, workflow_id, workflow_version=1)
    assert pinned.workflow_version == 1
    with pytest.raises(NotFound):
        _create(session, tenant_a, project_id, workflow_id, workflow_version=9)


@pytest.mark.parametrize(
    ("documents", "error"),
    [
        ([], InvalidInput),
        ([DocumentSpec(f"{i}.pdf", "application/pdf", 1) for i in range(6)], LimitExceeded),
        ([DocumentSpec("big.pdf", "application/pdf", 1001)], LimitExceeded),
        ([DocumentSpec("neg.pdf", "application/pdf", -1)], InvalidInput),
        ([DocumentSpec(" ", "application/pdf", 1)], InvalidInput),
    ],
)
def test_limits_and_invalid_documents(
    session: Session, tenant_a: TenantContext, documents: list[DocumentSpec], error: type
) -> None:
    project_id, workflow_id = _setup(session, tenant_a)
    with pytest.raises(error):
        _create(session, tenant_a, project_id, workflow_id, documents=documents)
    project = projects.get_project(session, tenant_a, project_id=project_id)
    assert project.batch_count == 0


def test_workflow_of_another_project_is_refused(session: Session, tenant_a: TenantContext) -> None:
    project_id, workflow_id = _setup(session, tenant_a)
    other = projects.create_project(session, tenant_a, name="Other")
    with pytest.raises(InvalidInput):
        _create(session, tenant_a, other.id, workflow_id)
    with pytest.raises(InvalidInput):
        _create(
            session, tenant_a, project_id, workflow_id, scheduled_for=utcnow().replace(tzinfo=None)
        )


def test_list_newest_first_and_by_status(session: Session, tenant_a: TenantContext) -> None:
    project_id, workflow_id = _setup(session, tenant_a)
    made = [_create(session, tenant_a, project_id, workflow_id).id for _ in range(5)]
    page1 = service.list_batches(session, tenant_a, status=None, cursor=None, limit=3)
    page2 = service.list_batches(session, tenant_a, status=None, cursor=page1.next_cursor, limit=3)
    assert [b.id for b in page1.items + page2.items] == made[::-1]
    assert page2.next_cursor is None
    created = service.list_batches(session, tenant_a, status="CREATED", cursor=None, limit=50)
    assert len(created.items) == 5
    assert (
        service.list_batches(session, tenant_a, status="FAILED", cursor=None, limit=50).items == []
    )
    with pytest.raises(InvalidInput):
        service.list_batches(session, tenant_a, status="BOGUS", cursor=None, limit=50)


def test_another_tenants_batches_are_not_found(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    project_id, workflow_id = _setup(session, tenant_a)
    batch = _create(session, tenant_a, project_id, workflow_id)
    with pytest.raises(NotFound):
        service.get_batch(session, tenant_b, batch_id=batch.id)
    assert service.list_batches(session, tenant_b, status=None, cursor=None, limit=50).items == []
    with pytest.raises(NotFound):
        _create(session, tenant_b, project_id, workflow_id)


def test_the_pipeline_finds_a_batchs_tenant_by_id(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    project_id, workflow_id = _setup(session, tenant_a)
    batch = _create(session, tenant_a, project_id, workflow_id)
    # Even from a session bound to another tenant, the lookup crosses tenants by design.
    service.list_batches(session, tenant_b, status=None, cursor=None, limit=1)
    assert service.batch_tenant(session, batch_id=batch.id).tenant_id == tenant_a.tenant_id
    with pytest.raises(NotFound):
        service.batch_tenant(session, batch_id="bat_missing")


def test_due_batches_are_found_across_tenants(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    now = utcnow()
    ids = {}
    for tenant in (tenant_a, tenant_b):
        project_id, workflow_id = _setup(session, tenant)
        ids[tenant.tenant_id] = _create(
            session, tenant, project_id, workflow_id, scheduled_for=now - timedelta(minutes=1)
        ).id
        _create(session, tenant, project_id, workflow_id, scheduled_for=now + timedelta(hours=1))
        _create(session, tenant, project_id, workflow_id, upload_deadline=now + timedelta(hours=2))
    # Other tests may have committed batches too: look at this test's tenants only.
    ours = {tenant_a.tenant_id, tenant_b.tenant_id}

    def due_at(when: datetime) -> set[tuple[str, str]]:
        found = service.due_batches(session, now=when, limit=10_000)
        return {(t.tenant_id, b) for t, b in found if t.tenant_id in ours}

    assert due_at(now) == set(ids.items())
    assert len(due_at(now + timedelta(hours=3))) == 6
