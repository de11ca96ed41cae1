"""Projects through the real database: CRUD, pagination and tenant isolation."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from docflow.errors import Conflict, InvalidInput, NotFound
from docflow.projects import service
from docflow.tenancy import TenantContext


def test_create_get_update_delete(session: Session, tenant_a: TenantContext) -> None:
    project = service.create_project(session, tenant_a, name=" Invoices ", description="AP")
    assert project.id.startswith("prj_") and project.name == "Invoices"
    assert (project.batch_count, project.document_count) == (0, 0)
    assert service.get_project(session, tenant_a, project_id=project.id) is project

    updated = service.update_project(session, tenant_a, project_id=project.id, name="Bills")
    assert (updated.name, updated.description) == ("Bills", "AP")
    assert updated.updated_at >= updated.created_at

    service.delete_project(session, tenant_a, project_id=project.id)
    with pytest.raises(NotFound):
        service.get_project(session, tenant_a, project_id=project.id)


def test_names_are_unique_per_tenant(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    service.create_project(session, tenant_a, name="Invoices")
    other = service.create_project(session, tenant_a, name="Receipts")
    with pytest.raises(Conflict):
        service.create_project(session, tenant_a, name="Invoices")
    with pytest.raises(Conflict):
        service.update_project(session, tenant_a, project_id=other.id, name="Invoices")
    assert (
        service.create_project(session, tenant_b, name="Invoices").tenant_id == tenant_b.tenant_id
    )
    with pytest.raises(InvalidInput):
        service.create_project(session, tenant_a, name=" ")


def test_list_pages_newest_first(session: Session, tenant_a: TenantContext) -> None:
    created = [service.create_project(session, tenant_a, name=f"p{i}").id for i in range(7)]
    seen: list[str] = []
    cursor = None
    while True:
        page = service.list_projects(session, tenant_a, cursor=cursor, limit=3)
        assert len(page.items) <= 3
        seen += [p.id for p in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == sorted(created, reverse=True)
    with pytest.raises(InvalidInput):
        service.list_projects(session, tenant_a, cursor=None, limit=0)
    with pytest.raises(InvalidInput):
        service.list_projects(session, tenant_a, cursor="not-a-cursor", limit=10)


def test_another_tenants_project_is_not_found(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    project = service.create_project(session, tenant_a, name="Secret")
    with pytest.raises(NotFound):
        service.get_project(session, tenant_b, project_id=project.id)
    with pytest.raises(NotFound):
        service.update_project(session, tenant_b, project_id=project.id, name="Mine")
    with pytest.raises(NotFound):
        service.delete_project(session, tenant_b, project_id=project.id)
    assert service.list_projects(session, tenant_b, cursor=None, limit=50).items == []
    assert service.get_project(session, tenant_a, project_id=project.id).name == "Secret"
