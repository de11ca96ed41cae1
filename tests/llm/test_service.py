"""The ledger, cache and budget on the real database: concurrent reservations never pass the
budget, the warning is written once, answers expire, usage groups by day and model."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from docflow import db
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.repository import OutboxRepository
from docflow.kit.clock import utcnow
from docflow.llm import service
from docflow.llm.config import LlmConfig, Price
from docflow.llm.models import LlmResult
from docflow.llm.provider import Usage
from docflow.llm.repository import LlmRepository
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants_service

CONFIG = LlmConfig(
    provider="openai",
    models={"standard": "m"},
    prices={"m": Price(Decimal(2), Decimal("0.5"), Decimal(8))},
)


def _tenant(engine: Engine) -> str:
    factory = db.make_write_session_factory(engine)
    with factory() as session, session.begin():
        return tenants_service.create_tenant(session, name="Budget", plan="free").id


def test_concurrent_reservations_stop_at_the_budget(engine: Engine) -> None:
    tenant_id = _tenant(engine)
    factory = db.make_write_session_factory(engine)
    granted: list[bool] = []
    start = threading.Barrier(12)

    def reserve() -> None:
        start.wait()
        for _ in range(3):
            with factory() as session, session.begin():
                ok = service.reserve_call(session, tenant_id, limit=10, now=utcnow())
            granted.append(ok)

    threads = [threading.Thread(target=reserve) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert granted.count(True) == 10 and granted.count(False) == 26
    with factory() as session:
        assert LlmRepository(session, tenant_id).calls_in(service.month_of(utcnow())) == 10
        events = session.scalars(
            OutboxRepository(session, tenant_id)
            .base(OutboxEvent)
            .where(OutboxEvent.type == envelopes.LLM_BUDGET_WARNING)
        ).all()
    assert len(events) == 1 and events[0].data["calls"] == 8
    assert events[0].data["budget_calls"] == 10


def test_a_tenant_budget_overrides_its_plan(session: Session, tenant_a: TenantContext) -> None:
    config = LlmConfig(monthly_calls={"free": 100, tenant_a.tenant_id: 5})
    assert service.monthly_budget(session, config, tenant_a.tenant_id) == 5
    other = tenants_service.create_tenant(session, name="Other", plan="free")
    assert service.monthly_budget(session, config, other.id) == 100
    paying = tenants_service.create_tenant(session, name="Paying", plan="team")
    assert service.monthly_budget(session, config, paying.id) is None


def test_answers_are_reused_until_they_expire(session: Session, tenant_a: TenantContext) -> None:
    now = utcnow()
    tenant = tenant_a.tenant_id
    keys = {"a": "k" * 64, "b": "l" * 64, "c": "m" * 64}
    stored = {"a": "1", "b": None}  # "c" left out of the answer: cached as null too
    service.store_answers(
        session, tenant, keys=keys, model="m", values=stored, now=now, ttl_seconds=60
    )
    assert service.cached_answers(session, tenant, keys=keys, now=now) == {
        "a": "1",
        "b": None,
        "c": None,
    }
    later = now + timedelta(seconds=61)
    assert service.cached_answers(session, tenant, keys=keys, now=later) == {}


def test_usage_per_day_and_model_with_costs(session: Session, tenant_a: TenantContext) -> None:
    now = utcnow()
    base = service.CallRecord("prj_1", "bat_1", "doc_1", "extract", "openai", "m", "standard")
    usage = Usage(input_tokens=1_000_000, cached_tokens=500_000, output_tokens=100_000)
    cost = service.record_call(
        session, tenant_a.tenant_id, CONFIG, replace(base, usage=usage), now=now
    )
    assert cost == Decimal("2.050000")  # 0.5 M x 2 + 0.5 M x 0.5 + 0.1 M x 8
    hit = replace(base, cache_hit=True, attempts=0)
    service.record_call(session, tenant_a.tenant_id, CONFIG, hit, now=now)
    other = replace(base, project_id="prj_2", model="other")
    service.record_call(session, tenant_a.tenant_id, CONFIG, other, now=now - timedelta(days=3))
    session.flush()
    rows = service.usage(session, tenant_a)
    # calls made and answers from the cache apart
    assert [(r.model, r.calls, r.cache_hits) for r in rows] == [("other", 1, 0), ("m", 1, 1)]
    assert rows[1].day == now.strftime("%Y-%m-%d") and rows[1].cost == Decimal("2.05")
    assert rows[1].cached_tokens == 500_000
    assert service.usage(session, tenant_a, project_id="prj_2")[0].model == "other"
    assert service.usage(session, tenant_a, since=now - timedelta(days=1))[0].model == "m"


def test_storing_an_answer_forgets_the_expired_ones(
    session: Session, tenant_a: TenantContext
) -> None:
    now = utcnow()
    tenant = tenant_a.tenant_id
    service.store_answers(
        session, tenant, keys={"f": "a" * 64}, model="m", values={}, now=now, ttl_seconds=10
    )
    later = now + timedelta(seconds=11)
    service.store_answers(
        session, tenant, keys={"f": "b" * 64}, model="m", values={}, now=later, ttl_seconds=10
    )
    session.flush()
    repository = LlmRepository(session, tenant)
    kept = session.scalars(repository.base(LlmResult)).all()
    assert [row.key for row in kept] == ["b" * 64]
