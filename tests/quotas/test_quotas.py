"""Plans and quotas through the real API on the test database: requests per second per key
(shared by every API process on PostgreSQL), documents and pages per month, documents per
batch, and `GET /v1/usage`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Plan, Settings
from docflow.main import create_app
from docflow.tenants import service as tenants_service
from support.api_fixtures import ApiTenant, make_api_tenant, post_project, post_workflow
from support.db_fixtures import on_postgres

PLANS = {
    "free": Plan(),
    "metered": Plan(requests_per_second=0.5, burst=3),
    "frozen": Plan(requests_per_second=0.001, burst=10),
    "small": Plan(documents_per_month=5, max_batch_documents=4),
    "paged": Plan(pages_per_month=1),
}


@pytest.fixture(scope="module")
def planned(api_settings: Settings, engine: Engine, app: object) -> Iterator[TestClient]:
    settings = api_settings.model_copy(update={"plans": PLANS})
    with TestClient(create_app(settings, engine=engine)) as client:
        yield client


def tenant_on(factory: sessionmaker[Session], plan: str) -> ApiTenant:
    tenant = make_api_tenant(factory, f"Planned {plan} {time.monotonic_ns()}")
    with factory() as session:
        row = tenants_service.get_tenant(session, tenant.tenant_id)
        row.plan = plan
        session.commit()
    return tenant


def second_key(factory: sessionmaker[Session], tenant: ApiTenant) -> dict[str, str]:
    with factory() as session:
        _, token = tenants_service.create_api_key(
            session, tenant.tenant_id, name="second", scopes=["*"]
        )
        session.commit()
    return {"Authorization": f"Bearer {token}"}


def test_a_key_over_its_rate_gets_429_with_retry_after(
    planned: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = tenant_on(session_factory, "metered")
    answers = [planned.get("/v1/projects", headers=tenant.headers) for _ in range(5)]
    assert [a.status_code for a in answers[:3]] == [200, 200, 200]
    assert [a.headers["RateLimit-Remaining"] for a in answers[:3]] == ["2", "1", "0"]
    assert all(a.headers["RateLimit-Limit"] == "3" for a in answers[:3])
    refused = answers[3]
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.headers["RateLimit-Remaining"] == "0"
    # Per key: the tenant's other key has its own burst.
    assert (
        planned.get("/v1/projects", headers=second_key(session_factory, tenant)).status_code == 200
    )
    time.sleep(2.1)  # one request's worth at one per two seconds
    assert planned.get("/v1/projects", headers=tenant.headers).status_code == 200


def test_concurrent_clients_get_exactly_the_burst(
    planned: TestClient,
    session_factory: sessionmaker[Session],
    api_settings: Settings,
    engine: Engine,
) -> None:
    tenant = tenant_on(session_factory, "frozen")  # a burst of 10, then one per 1000 s
    settings = api_settings.model_copy(update={"plans": PLANS})
    # On PostgreSQL a second app is a second API process: its limiter shares the database.
    clients = [planned]
    if on_postgres():
        clients.append(TestClient(create_app(settings, engine=engine)).__enter__())
    statuses: list[int] = []
    lock = threading.Lock()

    def hammer(client: TestClient) -> None:
        for _ in range(10):
            code = client.get("/v1/projects", headers=tenant.headers).status_code
            with lock:
                statuses.append(code)

    threads = [threading.Thread(target=hammer, args=(clients[i % len(clients)],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for extra in clients[1:]:
        extra.__exit__(None, None, None)
    assert sorted(statuses).count(200) == 10
    assert statuses.count(429) == 30


def post_batch(client: TestClient, tenant: ApiTenant, ids: dict[str, str], count: int) -> Any:
    body = {
        "project_id": ids["project"],
        "workflow_id": ids["workflow"],
        "documents": [
            {"name": f"d{i}.pdf", "content_type": "application/pdf", "size": 100}
            for i in range(count)
        ],
    }
    return client.post("/v1/batches", json=body, headers=tenant.headers)


def objects(client: TestClient, tenant: ApiTenant) -> dict[str, str]:
    project = post_project(client, tenant)
    workflow = post_workflow(client, tenant, project["id"])
    return {"project": project["id"], "workflow": workflow["id"]}


def test_the_month_s_documents_and_the_batch_size_are_bounded_by_the_plan(
    planned: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = tenant_on(session_factory, "small")
    ids = objects(planned, tenant)
    too_big = post_batch(planned, tenant, ids, 5)
    assert too_big.status_code == 413
    assert too_big.json()["errors"][0]["field"] == "documents"
    assert post_batch(planned, tenant, ids, 3).status_code == 202
    refused = post_batch(planned, tenant, ids, 3)
    assert refused.status_code == 429, refused.text
    problem = refused.json()
    assert problem["code"] == "quota_exceeded"
    assert problem["quota"] == "documents_per_month"
    assert problem["limit"] == 5
    # When to retry: the seconds until the quota resets at the start of next month (UTC).
    reset = datetime.fromisoformat(problem["reset_at"])
    wait = int(refused.headers["Retry-After"])
    assert reset.day == 1 and reset.hour == 0
    assert abs(datetime.now(UTC) + timedelta(seconds=wait) - reset) < timedelta(seconds=60)
    assert post_batch(planned, tenant, ids, 2).status_code == 202
    usage = planned.get("/v1/usage", headers=tenant.headers).json()
    assert usage["plan"] == "small"
    assert usage["limits"]["documents_per_month"] == 5
    assert usage["limits"]["max_batch_documents"] == 4
    assert usage["usage"]["documents"] == 5
    assert usage["usage"]["month"] == time.strftime("%Y-%m", time.gmtime())


def test_concurrent_batches_never_pass_the_month_s_documents(
    planned: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = tenant_on(session_factory, "small")
    ids = objects(planned, tenant)
    codes: list[int] = []
    lock = threading.Lock()

    def create() -> None:
        code = post_batch(planned, tenant, ids, 2).status_code
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=create) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [202, 202] + [429] * 4
    usage = planned.get("/v1/usage", headers=tenant.headers).json()
    assert usage["usage"]["documents"] == 4


def test_unlimited_plans_send_no_rate_headers(
    planned: TestClient, session_factory: sessionmaker[Session]
) -> None:
    tenant = tenant_on(session_factory, "free")
    answer = planned.get("/v1/usage", headers=tenant.headers)
    assert answer.status_code == 200
    assert "RateLimit-Limit" not in answer.headers
    assert answer.json()["limits"]["documents_per_month"] is None
