"""The step body of the idempotency keys' hourly purge (declared in `idempotency.flows`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from docflow.events.repository import all_tenant_ids
from docflow.idempotency.service import purge
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext


def purge_all(
    write_factory: sessionmaker[Session], *, retention_hours: int, now: datetime | None = None
) -> int:
    """`service.purge` every tenant, each in its own transaction bound to that tenant (so
    row-level security on PostgreSQL admits its rows, and only its rows); the total deleted."""
    when = now or utcnow()
    with write_factory() as session:
        tenant_ids = all_tenant_ids(session)
    total = 0
    for tenant_id in tenant_ids:
        with write_factory() as session, session.begin():
            total += purge(
                session, TenantContext(tenant_id), retention_hours=retention_hours, now=when
            )
    return total
