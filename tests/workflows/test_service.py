"""Extraction workflows through the real database: versions, listing order, apply by name."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from docflow.errors import Conflict, NotFound
from docflow.projects import service as projects
from docflow.tenancy import TenantContext
from docflow.workflows import service
from support.db_fixtures import sample_definition


@pytest.fixture
def project_id(session: Session, tenant_a: TenantContext) -> str:
    return projects.create_project(session, tenant_a, name="AP").id


def test_create_then_edit_makes_versions(
    session: Session, tenant_a: TenantContext, project_id: str
) -> None:
    v1 = service.create_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition()
    )
    assert v1.id.startswith("wfl_") and (v1.version, v1.current_version) == (1, 1)
    assert v1.definition == sample_definition()

    edited = sample_definition(review_threshold=0.9)
    v2 = service.update_workflow(session, tenant_a, workflow_id=v1.id, definition=edited)
    assert (v2.version, v2.current_version) == (2, 2)
    assert v2.schema_hash != v1.schema_hash
    assert v2.updated_at >= v1.updated_at

    assert service.get_workflow(session, tenant_a, workflow_id=v1.id).definition == edited
    old = service.get_workflow(session, tenant_a, workflow_id=v1.id, version=1)
    assert old.definition.review_threshold == 0.8 and old.current_version == 2
    with pytest.raises(NotFound):
        service.get_workflow(session, tenant_a, workflow_id=v1.id, version=3)


def test_names_are_unique_in_a_project(
    session: Session, tenant_a: TenantContext, project_id: str
) -> None:
    service.create_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition()
    )
    receipt = service.create_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition("Receipt")
    )
    with pytest.raises(Conflict):
        service.create_workflow(
            session, tenant_a, project_id=project_id, definition=sample_definition()
        )
    with pytest.raises(Conflict):
        service.update_workflow(
            session, tenant_a, workflow_id=receipt.id, definition=sample_definition()
        )
    renamed = service.update_workflow(
        session, tenant_a, workflow_id=receipt.id, definition=sample_definition("Till slip")
    )
    assert renamed.name == "Till slip"


def test_list_most_recently_updated_first(
    session: Session, tenant_a: TenantContext, project_id: str
) -> None:
    made = [
        service.create_workflow(
            session, tenant_a, project_id=project_id, definition=sample_definition(f"w{i}")
        )
        for i in range(5)
    ]
    service.update_workflow(
        session,
        tenant_a,
        workflow_id=made[1].id,
        definition=sample_definition("w1", description="x"),
    )
    seen = []
    cursor = None
    while True:
        page = service.list_workflows(
            session, tenant_a, project_id=project_id, cursor=cursor, limit=2
        )
        seen += page.items
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert [w.name for w in seen] == ["w1", "w4", "w3", "w2", "w0"]
    assert seen[0].version == 2 and seen[0].definition.description == "x"


def test_apply_creates_then_versions_only_on_change(
    session: Session, tenant_a: TenantContext, project_id: str
) -> None:
    first = service.apply_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition()
    )
    again = service.apply_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition()
    )
    assert (first.id, first.version) == (again.id, again.version) == (first.id, 1)
    changed = service.apply_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition(review_threshold=1)
    )
    assert (changed.id, changed.version) == (first.id, 2)


def test_another_tenants_workflows_are_not_found(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext, project_id: str
) -> None:
    view = service.create_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition()
    )
    with pytest.raises(NotFound):
        service.get_workflow(session, tenant_b, workflow_id=view.id)
    with pytest.raises(NotFound):
        service.update_workflow(
            session, tenant_b, workflow_id=view.id, definition=sample_definition()
        )
    with pytest.raises(NotFound):
        service.list_workflows(session, tenant_b, project_id=project_id, cursor=None, limit=10)
    with pytest.raises(NotFound):
        service.create_workflow(
            session, tenant_b, project_id=project_id, definition=sample_definition()
        )
    with pytest.raises(NotFound):
        service.apply_workflow(
            session, tenant_b, project_id=project_id, definition=sample_definition()
        )


def test_deleting_a_project_deletes_its_workflows(
    session: Session, tenant_a: TenantContext, project_id: str
) -> None:
    view = service.create_workflow(
        session, tenant_a, project_id=project_id, definition=sample_definition()
    )
    service.update_workflow(session, tenant_a, workflow_id=view.id, definition=sample_definition())
    projects.delete_project(session, tenant_a, project_id=project_id)
    session.expunge_all()
    with pytest.raises(NotFound):
        service.get_workflow(session, tenant_a, workflow_id=view.id)
