"""The signed-in user's own account in the console, whatever tenant they chose: the tenants they
belong to (by name, for the tenant choice), the invitations waiting for them (accept, decline,
`tenants.invitations`) and their name, which only they (or the operator) change."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel

from docflow.http.deps import SessionDep
from docflow.tenants import invitations
from docflow.tenants import service as tenants_service
from docflow.web.auth_api import PREFIX, AccountDep

router = APIRouter(include_in_schema=False)


class MyTenant(BaseModel):
    id: str
    name: str
    role: str
    current: bool


class MyInvitation(BaseModel):
    id: str
    tenant_id: str
    tenant_name: str
    role: str
    created_at: datetime


class MyTenants(BaseModel):
    """The tenants the signed-in user belongs to, by id, and the invitations waiting for them."""

    tenants: list[MyTenant]
    invitations: list[MyInvitation]


@router.get("/me/tenants", response_model=MyTenants)
def my_tenants(account: AccountDep, session: SessionDep) -> MyTenants:
    """The signed-in user's tenants (id, name, role, whether the session is in it) and their
    pending invitations, as JSON."""
    user, current = account.user, account.session.tenant_id
    return MyTenants(
        tenants=[
            MyTenant(id=t, name=user.name_of(t), role=role, current=t == current)
            for t, role in user.tenants
        ],
        invitations=[
            MyInvitation(
                id=i.id,
                tenant_id=i.tenant_id,
                tenant_name=i.tenant_name,
                role=i.role,
                created_at=i.created_at,
            )
            for i in invitations.pending_for(session, user_id=user.user_id)
        ],
    )


@router.post("/invitations/{invitation_id}/accept")
def accept(invitation_id: str, account: AccountDep, session: SessionDep) -> Response:
    """Accept an invitation: the user becomes a member with its role, then chooses a tenant."""
    invitations.accept(session, user_id=account.user.user_id, invitation_id=invitation_id)
    return RedirectResponse(f"{PREFIX}/tenants", status_code=303)


@router.post("/invitations/{invitation_id}/decline")
def decline(invitation_id: str, account: AccountDep, session: SessionDep) -> Response:
    """Decline an invitation: it is gone, nothing else changes."""
    invitations.decline(session, user_id=account.user.user_id, invitation_id=invitation_id)
    return RedirectResponse(f"{PREFIX}/tenants", status_code=303)


@router.post("/me/name")
def rename(
    account: AccountDep, session: SessionDep, name: Annotated[str, Form(max_length=200)]
) -> Response:
    """Set the user's own name (shown in every tenant they belong to)."""
    tenants_service.rename_self(session, user_id=account.user.user_id, name=name)
    return RedirectResponse(f"{PREFIX}/tenants", status_code=303)
