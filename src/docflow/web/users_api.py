"""The console's users page (admins only, as `/v1/users` needs the `admin` scope): the tenant's
members, their roles and whether they sign in through an OpenID Connect issuer, inviting one by
email (an email the directory knows already is invited, `tenants.invitations`), cancelling an
invitation, changing a role, removing a member, releasing a member's issuer sign-in. Every
change goes through the tenants service: the last admin stays (409 `last_admin`), a removed
member's keys are revoked, a released member's next sign-in through the issuer binds afresh
(`tenants.identities`: an admin of any tenant the user belongs to may release it)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from docflow.http.deps import SessionDep
from docflow.tenants import identities, invitations
from docflow.tenants import service as tenants_service
from docflow.web.auth_api import PREFIX, MemberDep, TemplatesDep, page

router = APIRouter(include_in_schema=False)

ADMIN_SCOPE = "admin"
MEMBERS_SHOWN = 200
RoleForm = Annotated[str, Form(max_length=32)]


@router.get("/users", response_class=HTMLResponse)
def users_page(
    request: Request, member: MemberDep, session: SessionDep, templates: TemplatesDep
) -> Response:
    """The tenant's members (the first `MEMBERS_SHOWN`, by user id) and the invitation form."""
    member.require(ADMIN_SCOPE)
    found = tenants_service.list_members(session, member.tenant.tenant_id, limit=MEMBERS_SHOWN)
    members = [
        (m.user_id, m.user.email, m.user.name, m.role, m.user.oidc_subject is not None)
        for m in found.items
    ]
    return page(
        templates,
        request,
        "users.html",
        member,
        members=members,
        invited=invitations.list_invitations(session, member.tenant.tenant_id),
        roles=sorted(tenants_service.ROLES),
        more=found.next_cursor is not None,
        # The issuer sign-in column: with an issuer configured, or bindings left from one.
        sign_in=request.app.state.console_oidc is not None or any(m[4] for m in members),
    )


@router.post("/users")
def invite(
    member: MemberDep,
    session: SessionDep,
    email: Annotated[str, Form(max_length=320)],
    role: RoleForm,
    name: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """Add a member by email (a new email joins the directory and the tenant); an email the
    directory knows already is invited: they join once they accept."""
    member.require(ADMIN_SCOPE)
    invitations.add_by_email(
        session,
        member.tenant.tenant_id,
        email=email,
        role=role,
        name=name,
        actor=member.tenant.actor,
    )
    return RedirectResponse(f"{PREFIX}/users", status_code=303)


@router.post("/users/invitations/{invitation_id}/cancel")
def cancel_invitation(invitation_id: str, member: MemberDep, session: SessionDep) -> Response:
    """Withdraw a pending invitation."""
    member.require(ADMIN_SCOPE)
    invitations.cancel(session, member.tenant.tenant_id, invitation_id=invitation_id)
    return RedirectResponse(f"{PREFIX}/users", status_code=303)


@router.post("/users/{user_id}/role")
def change_role(user_id: str, member: MemberDep, session: SessionDep, role: RoleForm) -> Response:
    """Give a member another role (their keys narrow at once)."""
    member.require(ADMIN_SCOPE)
    tenants_service.update_member(session, member.tenant.tenant_id, user_id=user_id, role=role)
    return RedirectResponse(f"{PREFIX}/users", status_code=303)


@router.post("/users/{user_id}/remove")
def remove(user_id: str, member: MemberDep, session: SessionDep) -> Response:
    """Remove a member from the tenant and revoke their keys here."""
    member.require(ADMIN_SCOPE)
    tenants_service.remove_member(session, member.tenant.tenant_id, user_id=user_id)
    return RedirectResponse(f"{PREFIX}/users", status_code=303)


@router.post("/users/{user_id}/release-sign-in")
def release_sign_in(user_id: str, member: MemberDep, session: SessionDep) -> Response:
    """Release the issuer identity a member signs in with (their next sign-in binds afresh)."""
    member.require(ADMIN_SCOPE)
    identities.release_oidc(
        session, member.tenant.tenant_id, user_id=user_id, actor=member.tenant.actor
    )
    return RedirectResponse(f"{PREFIX}/users", status_code=303)
