"""A tenant's status: suspend and resume it (audited), list and show the directory (the
operator's), and refuse what a suspended tenant sends.

A suspended tenant's API keys answer 403 `tenant_suspended` (`service.authenticate`: at once
through this process, through another within `VERIFIED_KEY_TTL_SECONDS`), and so do the files
sent to its upload URLs, which carry no key (`require_active`). Batches already running run to
their end; every new batch or upload needs a key or an upload, so none starts. Who suspended it,
when and why stay on the row while it is suspended; every change is the log line
`tenant.suspended` / `tenant.resumed` naming the actor.
"""

from __future__ import annotations

import structlog
from sqlalchemy.orm import Session

from docflow.errors import InvalidInput, get_one
from docflow.events.repository import all_tenant_ids
from docflow.kit.clock import utcnow
from docflow.tenants.models import TENANT_ACTIVE, TENANT_SUSPENDED, Tenant
from docflow.tenants.repository import TenantRowRepository
from docflow.tenants.service import TenantSuspended, forget_when_committed, verified_keys

log = structlog.get_logger(__name__)

STATUSES = (TENANT_ACTIVE, TENANT_SUSPENDED)


def get_tenant(session: Session, tenant_id: str) -> Tenant:
    """The tenant's row; NotFound ("tenant not found") otherwise."""
    return get_one(TenantRowRepository(session, tenant_id).get(), "tenant")


def list_tenants(session: Session, *, status: str | None = None) -> list[Tenant]:
    """Every tenant (or those in `status`), by id: the operator's view of the directory. Each
    row is read under its own tenant (on PostgreSQL a tenant sees only its own row), so the
    session ends bound to the last one."""
    if status is not None:
        _check_status(status)
    found = []
    for tenant_id in all_tenant_ids(session):
        tenant = TenantRowRepository(session, tenant_id).get()
        if tenant is not None and status in (None, tenant.status):
            found.append(tenant)
    return found


def active_key_count(session: Session, tenant_id: str) -> int:
    """How many of the tenant's API keys are not revoked."""
    return TenantRowRepository(session, tenant_id).active_key_count()


def _check_status(status: str) -> str:
    if status not in STATUSES:
        raise InvalidInput(f"status must be {TENANT_ACTIVE} or {TENANT_SUSPENDED}", field="status")
    return status


def suspend_tenant(session: Session, tenant_id: str, *, actor: str, reason: str) -> Tenant:
    """Suspend a tenant from the commit on (see the module docstring); the caller commits.
    Suspending a suspended tenant changes nothing (the first suspension stands). NotFound for
    an unknown tenant; InvalidInput naming `reason` when it is empty or too long."""
    reason = reason.strip()
    if not reason or len(reason) > 500:
        raise InvalidInput("the reason must be 1 to 500 characters", field="reason")
    tenant = get_one(TenantRowRepository(session, tenant_id).lock(), "tenant")
    if tenant.status == TENANT_SUSPENDED:
        return tenant
    tenant.status = TENANT_SUSPENDED
    tenant.suspended_at = utcnow()
    tenant.suspended_by = actor.strip()[:200] or "operator"
    tenant.suspend_reason = reason
    session.flush()
    forget_when_committed(session, lambda: verified_keys.forget_tenant(tenant_id))
    log.info("tenant.suspended", tenant_id=tenant_id, actor=tenant.suspended_by, reason=reason)
    return tenant


def resume_tenant(session: Session, tenant_id: str, *, actor: str) -> Tenant:
    """Make a suspended tenant active again (its keys work at once; logged `tenant.resumed`
    with the actor and the suspension it ends). Resuming an active tenant changes nothing."""
    tenant = get_one(TenantRowRepository(session, tenant_id).lock(), "tenant")
    if tenant.status == TENANT_ACTIVE:
        return tenant
    log.info(
        "tenant.resumed",
        tenant_id=tenant_id,
        actor=actor.strip()[:200] or "operator",
        suspended_at=tenant.suspended_at.isoformat() if tenant.suspended_at else None,
        suspended_by=tenant.suspended_by,
    )
    tenant.status = TENANT_ACTIVE
    tenant.suspended_at = tenant.suspended_by = tenant.suspend_reason = None
    session.flush()
    return tenant


def is_suspended(session: Session, tenant_id: str) -> bool:
    """Whether the tenant is suspended (an unknown tenant is not); binds `session` to it."""
    tenant = TenantRowRepository(session, tenant_id).get()
    return tenant is not None and tenant.status == TENANT_SUSPENDED


def require_active(session: Session, tenant_id: str) -> None:
    """`TenantSuspended` (403) when the tenant is suspended: for what a tenant sends without an
    API key (an upload URL's file)."""
    if is_suspended(session, tenant_id):
        raise TenantSuspended("the tenant is suspended: it takes no uploads")
