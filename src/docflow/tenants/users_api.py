"""The calling tenant's users and their roles: `/v1/users` (admin scope), and the invitations of
users the directory knows already (`tenants.invitations`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status

from docflow.http.deps import ADMIN_SCOPE, PageDep, SessionDep, TenantDep, require_scope
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE
from docflow.kit import ids
from docflow.tenants import invitations, service
from docflow.tenants.models import Invitation, Membership
from docflow.tenants.schemas import (
    InvitationList,
    InvitationRead,
    UserCreate,
    UserList,
    UserRead,
    UserUpdate,
)

router = APIRouter(
    prefix="/users",
    tags=["users"],
    dependencies=[Depends(require_scope(read=ADMIN_SCOPE, write=ADMIN_SCOPE))],
)


def _read(member: Membership) -> UserRead:
    return UserRead.of(member, service.ROLE_SCOPES.get(member.role, ()))


def _added(added: Membership | Invitation) -> UserRead | InvitationRead:
    if isinstance(added, Invitation):
        return InvitationRead.model_validate(added)
    return _read(added)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=UserRead | InvitationRead,
    responses=CONFLICT_RESPONSE,
)
def create_user(
    body: UserCreate, session: SessionDep, tenant: TenantDep, idempotency: IdempotencyDep
) -> Response:
    """Add a new email as a member, or invite a user the directory knows (shows nothing of them)."""

    def current(object_id: str) -> object:
        if ids.has_prefix(object_id, ids.INVITATION):
            return invitations.get_invitation(session, tenant.tenant_id, invitation_id=object_id)
        return service.get_member(session, tenant.tenant_id, user_id=object_id)

    return idempotency.respond(
        body,
        status_code=status.HTTP_201_CREATED,
        create=lambda: _added(
            invitations.add_by_email(
                session,
                tenant.tenant_id,
                email=body.email,
                name=body.name,
                role=body.role,
                actor=tenant.actor,
            )
        ),
        current=current,
    )


@router.get("/invitations", response_model=InvitationList)
def list_invitations(session: SessionDep, tenant: TenantDep) -> InvitationList:
    """The tenant's pending invitations, oldest first."""
    found = invitations.list_invitations(session, tenant.tenant_id)
    return InvitationList(items=[InvitationRead.model_validate(i) for i in found])


@router.delete(
    "/invitations/{invitation_id}",
    status_code=status.HTTP_204_NO_CONTENT,
)
def cancel_invitation(invitation_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    """Withdraw a pending invitation; 404 when it is not the tenant's (or was answered)."""
    invitations.cancel(session, tenant.tenant_id, invitation_id=invitation_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("", response_model=UserList)
def list_users(
    session: SessionDep,
    tenant: TenantDep,
    page: PageDep,
    email: Annotated[
        str | None,
        Query(
            max_length=320,
            description="only the member with this email (case-insensitive): one item, or "
            "none when no member of the tenant has it (a user of another tenant included)",
        ),
    ] = None,
) -> UserList:
    """List the tenant's users, by id; with `email`, find one of them by email."""
    if email is not None:
        found = service.find_member_by_email(session, tenant.tenant_id, email=email)
        return UserList(items=[_read(found)] if found else [], next_cursor=None)
    result = service.list_members(session, tenant.tenant_id, cursor=page.cursor, limit=page.limit)
    return UserList(items=[_read(m) for m in result.items], next_cursor=result.next_cursor)


@router.get("/{user_id}", response_model=UserRead)
def get_user(user_id: str, session: SessionDep, tenant: TenantDep) -> UserRead:
    """Get one of the tenant's users."""
    return _read(service.get_member(session, tenant.tenant_id, user_id=user_id))


@router.patch("/{user_id}", response_model=UserRead, responses=CONFLICT_RESPONSE)
def update_user(user_id: str, body: UserUpdate, session: SessionDep, tenant: TenantDep) -> UserRead:
    """Change a member's role, or your own name (403 `name_not_yours` for another's name)."""
    member = service.update_member(
        session,
        tenant.tenant_id,
        user_id=user_id,
        role=body.role,
        name=body.name,
        by_user=tenant.user_id,
    )
    return _read(member)


@router.delete("/{user_id}", status_code=status.HTTP_204_NO_CONTENT, responses=CONFLICT_RESPONSE)
def remove_user(user_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    """Remove a user from the tenant and revoke their keys here; 409 for the only admin."""
    service.remove_member(session, tenant.tenant_id, user_id=user_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
