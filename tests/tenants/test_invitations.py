"""Adding a user the directory knows already is an invitation they accept or decline; a tenant
admin never changes a user's name."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from docflow.errors import NotFound
from docflow.tenancy import TenantContext
from docflow.tenants import invitations, service
from docflow.tenants.models import Invitation, Membership


def _member_of_b(session: Session, tenant_b: TenantContext, email: str) -> str:
    return service.invite_user(
        session, tenant_b.tenant_id, email=email, name="Bea", role="admin"
    ).user_id


def test_a_known_email_is_invited_and_joins_only_once_it_accepts(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    user_id = _member_of_b(session, tenant_b, "bea@example.com")
    invited = invitations.add_by_email(
        session, tenant_a.tenant_id, email="BEA@example.com", role="reviewer", actor="key_x"
    )
    assert isinstance(invited, Invitation)
    assert (invited.email, invited.role, invited.invited_by) == (
        "bea@example.com",
        "reviewer",
        "key_x",
    )
    assert service.list_members(session, tenant_a.tenant_id).items == []
    with pytest.raises(invitations.AlreadyInvited):
        invitations.add_by_email(
            session, tenant_a.tenant_id, email="bea@example.com", role="viewer", actor="key_x"
        )
    pending = invitations.pending_for(session, user_id=user_id)
    assert [(p.id, p.tenant_id, p.role) for p in pending] == [
        (invited.id, tenant_a.tenant_id, "reviewer")
    ]
    member = invitations.accept(session, user_id=user_id, invitation_id=invited.id)
    assert (member.tenant_id, member.role, member.user.name) == (
        tenant_a.tenant_id,
        "reviewer",
        "Bea",
    )
    assert invitations.pending_for(session, user_id=user_id) == []
    assert [t for t, _ in service.list_user_tenants(session, user_id=user_id)] == sorted(
        [tenant_a.tenant_id, tenant_b.tenant_id]
    )
    with pytest.raises(service.AlreadyAMember):
        invitations.add_by_email(
            session, tenant_a.tenant_id, email="bea@example.com", role="viewer", actor="key_x"
        )


def test_a_new_email_joins_at_once_and_a_declined_invitation_changes_nothing(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    added = invitations.add_by_email(
        session, tenant_a.tenant_id, email="new@example.com", role="viewer", name="N", actor="op"
    )
    assert isinstance(added, Membership) and added.user.name == "N"
    user_id = _member_of_b(session, tenant_b, "dee@example.com")
    invited = invitations.add_by_email(
        session, tenant_a.tenant_id, email="dee@example.com", role="admin", actor="op"
    )
    with pytest.raises(NotFound):  # another user cannot answer it
        invitations.accept(session, user_id=added.user_id, invitation_id=invited.id)
    invitations.decline(session, user_id=user_id, invitation_id=invited.id)
    assert invitations.list_invitations(session, tenant_a.tenant_id) == []
    assert service.list_user_tenants(session, user_id=user_id) == [(tenant_b.tenant_id, "admin")]
    with pytest.raises(NotFound):
        invitations.accept(session, user_id=user_id, invitation_id=invited.id)


def test_only_the_user_changes_their_name(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    user_id = _member_of_b(session, tenant_b, "eve@example.com")
    admin = service.invite_user(session, tenant_b.tenant_id, email="boss@example.com", role="admin")
    with pytest.raises(service.NotYourName) as refused:
        service.update_member(
            session, tenant_b.tenant_id, user_id=user_id, name="Renamed", by_user=admin.user_id
        )
    assert (refused.value.status, refused.value.field) == (403, "name")
    service.update_member(session, tenant_b.tenant_id, user_id=user_id, name="Eve", by_user=user_id)
    assert service.get_member(session, tenant_b.tenant_id, user_id=user_id).user.name == "Eve"
    service.rename_self(session, user_id=user_id, name="  Eve B. ")
    assert service.find_user_by_email(session, email="eve@example.com").name == "Eve B."
