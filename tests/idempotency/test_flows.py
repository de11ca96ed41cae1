"""The scheduled purge of idempotency keys, run by the real durable runtime."""

from __future__ import annotations

from datetime import timedelta

from dbos import DBOS

from docflow.idempotency import service
from docflow.idempotency.flows import PURGE_SCHEDULE, purge_schedule, purge_tick
from docflow.idempotency.repository import IdempotencyRepository
from docflow.kit.clock import utcnow
from docflow.runtime.context import BATCHES_QUEUE
from docflow.tenancy import TenantContext
from support.dbos_fixtures import DbosEnv, dbos_env  # noqa: F401


def test_the_scheduled_purge_forgets_old_keys(dbos_env: DbosEnv) -> None:  # noqa: F811
    tenant = TenantContext(tenant_id=dbos_env.tenant().tenant_id)
    with dbos_env.session_factory.begin() as session:
        for key in ("old", "recent"):
            service.store(session, tenant, key=key, fingerprint="f", status_code=201, body={})
        row = IdempotencyRepository(session, tenant.tenant_id).get("old")
        assert row is not None
        row.created_at = utcnow() - timedelta(hours=30)
    DBOS.apply_schedules([purge_schedule(retention_hours=24, queue_name=BATCHES_QUEUE)])
    assert [s["schedule_name"] for s in DBOS.list_schedules()] == [PURGE_SCHEDULE]
    DBOS.delete_schedule(PURGE_SCHEDULE)
    purge_tick(utcnow(), 24)
    with dbos_env.session_factory() as session:
        assert service.lookup(session, tenant, key="old", fingerprint="f") is None
        assert service.lookup(session, tenant, key="recent", fingerprint="f") is not None
