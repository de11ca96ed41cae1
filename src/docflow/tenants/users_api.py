"""The calling tenant's users and their roles: `/v1/users` (admin scope)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response, status

from docflow.http.deps import ADMIN_SCOPE, PageDep, SessionDep, TenantDep, require_scope
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE
from docflow.tenants import service
from docflow.tenants.models import Membership
from docflow.tenants.schemas import UserCreate, UserList, UserRead, UserUpdate

router = APIRouter(
    prefix="/users",
    tags=["users"],
    dependencies=[Depends(require_scope(read=ADMIN_SCOPE, write=ADMIN_SCOPE))],
)


def _read(member: Membership) -> UserRead:
    return UserRead.of(member, service.ROLE_SCOPES.get(member.role, ()))


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=UserRead,
    responses=CONFLICT_RESPONSE,
)
def create_user(
    body: UserCreate, session: SessionDep, tenant: TenantDep, idempotency: IdempotencyDep
) -> Response:
    """Add a user by email with a role (a new email joins the directory); 409 if a member."""
    return idempotency.respond(
        body,
        status_code=status.HTTP_201_CREATED,
        create=lambda: _read(
            service.invite_user(
                session, tenant.tenant_id, email=body.email, name=body.name, role=body.role
            )
        ),
        current=lambda user_id: service.get_member(session, tenant.tenant_id, user_id=user_id),
    )


@router.get("", response_model=UserList)
def list_users(session: SessionDep, tenant: TenantDep, page: PageDep) -> UserList:
    """List the tenant's users, by id."""
    result = service.list_members(session, tenant.tenant_id, cursor=page.cursor, limit=page.limit)
    return UserList(items=[_read(m) for m in result.items], next_cursor=result.next_cursor)


@router.get("/{user_id}", response_model=UserRead)
def get_user(user_id: str, session: SessionDep, tenant: TenantDep) -> UserRead:
    """Get one of the tenant's users."""
    return _read(service.get_member(session, tenant.tenant_id, user_id=user_id))


@router.patch("/{user_id}", response_model=UserRead, responses=CONFLICT_RESPONSE)
def update_user(user_id: str, body: UserUpdate, session: SessionDep, tenant: TenantDep) -> UserRead:
    """Change a user's role or name; 409 `last_admin` for the tenant's only admin."""
    member = service.update_member(
        session, tenant.tenant_id, user_id=user_id, role=body.role, name=body.name
    )
    return _read(member)


@router.delete("/{user_id}", status_code=status.HTTP_204_NO_CONTENT, responses=CONFLICT_RESPONSE)
def remove_user(user_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    """Remove a user from the tenant and revoke their keys here; 409 for the only admin."""
    service.remove_member(session, tenant.tenant_id, user_id=user_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
