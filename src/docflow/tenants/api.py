"""The calling tenant's API keys: `/v1/api-keys`."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response, status

from docflow.errors import Forbidden
from docflow.http.deps import ADMIN_SCOPE, SessionDep, TenantDep, require_scope
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE
from docflow.tenants import service
from docflow.tenants.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyList, ApiKeyRead

router = APIRouter(
    prefix="/api-keys",
    tags=["api-keys"],
    dependencies=[Depends(require_scope(read=ADMIN_SCOPE, write=ADMIN_SCOPE))],
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ApiKeyCreated,
    responses=CONFLICT_RESPONSE,
)
def create_api_key(
    body: ApiKeyCreate, session: SessionDep, tenant: TenantDep, idempotency: IdempotencyDep
) -> Response:
    """Create an API key for the calling tenant; the key is in this answer only."""
    scopes = sorted(tenant.scopes) if body.scopes is None else sorted(set(body.scopes))
    if body.scopes is None and body.user_id is not None:
        scopes = service.scopes_within_role(
            session, tenant.tenant_id, user_id=body.user_id, scopes=scopes
        )
    beyond = [scope for scope in scopes if not tenant.has_scope(scope)]
    if beyond:
        raise Forbidden(
            f"a key cannot grant scopes it does not have: {', '.join(beyond)}",
            field="scopes",
        )

    def create() -> ApiKeyCreated:
        key, token = service.create_api_key(
            session,
            tenant.tenant_id,
            name=body.name,
            scopes=scopes,
            user_id=body.user_id,
            expires_at=body.expires_at,
        )
        return ApiKeyCreated(**ApiKeyRead.model_validate(key).model_dump(), key=token)

    return idempotency.respond(
        body, status_code=status.HTTP_201_CREATED, create=create, secret_fields=("key",)
    )


@router.get("", response_model=ApiKeyList)
def list_api_keys(session: SessionDep, tenant: TenantDep) -> ApiKeyList:
    """List the calling tenant's API keys (prefixes only, never secrets)."""
    keys = service.list_api_keys(session, tenant.tenant_id)
    return ApiKeyList(items=[ApiKeyRead.model_validate(k) for k in keys])


@router.delete("/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_api_key(key_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    """Revoke one of the calling tenant's API keys; it stops working at once."""
    service.revoke_api_key(session, tenant.tenant_id, key_id=key_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
