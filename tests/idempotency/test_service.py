"""Idempotency keys through the real database: replay, mismatch, tenant scope, races, purge."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from docflow.errors import Conflict, InvalidInput
from docflow.idempotency import service, steps
from docflow.idempotency.repository import IdempotencyRepository
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants


def test_store_then_replay(session: Session, tenant_a: TenantContext) -> None:
    assert service.lookup(session, tenant_a, key="k1", fingerprint="f") is None
    body = {"id": "prj_1", "name": "AP", "nested": {"b": 1, "a": [1, 2]}}
    service.store(session, tenant_a, key="k1", fingerprint="f", status_code=201, body=body)
    stored = service.lookup(session, tenant_a, key="k1", fingerprint="f")
    assert stored is not None and (stored.status_code, stored.body) == (201, body)
    assert list(stored.body) == ["id", "name", "nested"]


def test_same_key_other_request_is_a_conflict(session: Session, tenant_a: TenantContext) -> None:
    service.store(session, tenant_a, key="k1", fingerprint="f", status_code=201, body={})
    with pytest.raises(Conflict):
        service.lookup(session, tenant_a, key="k1", fingerprint="other")
    with pytest.raises(Conflict):
        service.store(session, tenant_a, key="k1", fingerprint="f", status_code=201, body={})
    # The failed store left the transaction usable.
    assert service.lookup(session, tenant_a, key="k1", fingerprint="f") is not None
    with pytest.raises(InvalidInput):
        service.lookup(session, tenant_a, key="x" * 256, fingerprint="f")


def test_keys_are_scoped_to_the_tenant(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    service.store(session, tenant_a, key="k", fingerprint="fa", status_code=201, body={"a": 1})
    assert service.lookup(session, tenant_b, key="k", fingerprint="fb") is None
    service.store(session, tenant_b, key="k", fingerprint="fb", status_code=202, body={"b": 2})
    stored = service.lookup(session, tenant_a, key="k", fingerprint="fa")
    assert stored is not None and stored.body == {"a": 1}


def test_concurrent_first_requests_one_wins(session_factory: sessionmaker[Session]) -> None:
    with session_factory.begin() as setup:
        tenant = TenantContext(tenant_id=tenants.create_tenant(setup, name="race").id)
    results: list[str] = []
    barrier = threading.Barrier(2)

    def attempt(n: int) -> None:
        with session_factory() as s:
            try:
                assert service.lookup(s, tenant, key="race", fingerprint="f") is None
                barrier.wait(timeout=10)
                service.store(s, tenant, key="race", fingerprint="f", status_code=201, body=n)
                s.commit()
                results.append("stored")
            except Conflict:
                s.rollback()
                results.append("conflict")
            except Exception as exc:  # SQLite: the loser may see a locked database instead
                s.rollback()
                results.append(type(exc).__name__)

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results.count("stored") == 1
    with session_factory() as s:
        stored = service.lookup(s, tenant, key="race", fingerprint="f")
        assert stored is not None and stored.body in (0, 1)


def _age(session: Session, tenant: TenantContext, key: str, hours: float) -> None:
    row = IdempotencyRepository(session, tenant.tenant_id).get(key)
    assert row is not None
    row.created_at = utcnow() - timedelta(hours=hours)
    session.flush()


def test_purge_forgets_the_tenants_keys_past_the_retention_only(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    for tenant in (tenant_a, tenant_b):
        for key in ("old", "recent"):
            service.store(session, tenant, key=key, fingerprint="f", status_code=201, body={})
        _age(session, tenant, "old", 25)
        _age(session, tenant, "recent", 23)
    assert service.purge(session, tenant_a, retention_hours=24) == 1
    assert service.lookup(session, tenant_a, key="old", fingerprint="f") is None
    assert service.lookup(session, tenant_a, key="recent", fingerprint="f") is not None
    # Another tenant's keys are not touched, however old.
    assert service.lookup(session, tenant_b, key="old", fingerprint="f") is not None
    # A forgotten key may be used again, for any request.
    service.store(session, tenant_a, key="old", fingerprint="g", status_code=202, body={"n": 2})
    later = utcnow() + timedelta(hours=24, minutes=1)
    assert service.purge(session, tenant_a, retention_hours=24, now=later) == 2
    with pytest.raises(ValueError):
        service.purge(session, tenant_a, retention_hours=0)


def test_purge_all_visits_every_tenant_each_under_its_own_scope(
    session_factory: sessionmaker[Session],
) -> None:
    # Committed rows of two tenants; on PostgreSQL the application role sees a tenant's rows
    # only in a transaction bound to that tenant (row-level security).
    made: list[TenantContext] = []
    with session_factory.begin() as setup:
        for name in ("purge one", "purge two"):
            tenant = TenantContext(tenant_id=tenants.create_tenant(setup, name=name).id)
            for key in ("old", "recent"):
                service.store(setup, tenant, key=key, fingerprint="f", status_code=201, body={})
            _age(setup, tenant, "old", 48)
            made.append(tenant)
    assert steps.purge_all(session_factory, retention_hours=24) >= 2
    with session_factory() as s:
        for tenant in made:
            assert service.lookup(s, tenant, key="old", fingerprint="f") is None
            assert service.lookup(s, tenant, key="recent", fingerprint="f") is not None
    later = utcnow() + timedelta(hours=25)
    assert steps.purge_all(session_factory, retention_hours=24, now=later) >= 2
    with session_factory() as s:
        for tenant in made:
            assert service.lookup(s, tenant, key="recent", fingerprint="f") is None
