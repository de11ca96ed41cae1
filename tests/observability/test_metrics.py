"""`/metrics` on the API: requests by route template, documents by outcome, step and stage
durations, and the database's gauges (queue backlog, dead letters, outbox lag), read from a real
app on the test database and a real batch through the durable runtime."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Settings
from docflow.main import create_app
from docflow.observability.metrics import DOCUMENTS, count_after_commit
from docflow.runtime.context import BATCHES_QUEUE
from support.api_fixtures import ApiTenant, make_objects
from support.dbos_fixtures import Setup, dbos_env, invoice_pdf, setup, submit, wait_terminal

__all__ = ["dbos_env", "setup"]

PDF = "application/pdf"


def samples(client: TestClient, headers: dict[str, str] | None = None) -> dict[tuple, float]:
    """Every sample of `/metrics`, by (name, sorted labels)."""
    response = client.get("/metrics", headers=headers or {})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    found: dict[tuple, float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict[tuple, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_are_counted_by_route_template_and_status(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    before = samples(client)
    for _ in range(3):
        assert client.get("/v1/projects", headers=tenant_key_a.headers).status_code == 200
    assert client.get("/v1/projects").status_code == 401
    assert client.get("/v1/batches/bat_missing", headers=tenant_key_a.headers).status_code == 404
    assert client.get("/no/such/path").status_code == 404
    after = samples(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    total = "docflow_http_requests_total"
    assert delta(total, method="GET", route="/v1/projects", status="200") == 3
    assert delta(total, method="GET", route="/v1/projects", status="401") == 1
    # The template, never the id: a million ids stay one series.
    assert delta(total, method="GET", route="/v1/batches/{batch_id}", status="404") == 1
    assert delta(total, method="GET", route="unmatched", status="404") == 1
    count = "docflow_http_request_duration_seconds_count"
    assert delta(count, method="GET", route="/v1/projects") == 4


def test_the_metrics_token_is_required_when_set(
    api_settings: Settings, engine: Engine, app: object
) -> None:
    settings = api_settings.model_copy(update={"metrics_token": "s3cret-scrape-token"})
    with TestClient(create_app(settings, engine=engine)) as guarded:
        refused = guarded.get("/metrics")
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        assert guarded.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        found = samples(guarded, {"Authorization": "Bearer s3cret-scrape-token"})
        assert value(found, "docflow_metrics_source_up", source="events") == 1


def test_a_batch_counts_documents_steps_stages_and_queue_gauges(setup: Setup) -> None:
    client = setup.env.client
    before = samples(client)
    batch = submit(
        setup,
        [
            ("a.pdf", PDF, invoice_pdf("INV-701", "10.00")),
            ("b.pdf", PDF, invoice_pdf("INV-702", "20.00")),
            ("broken.pdf", PDF, b"%PDF-1.7 not really a pdf"),
        ],
    )
    assert wait_terminal(setup, batch["id"])["status"] != "PROCESSING"
    # The counters move when each transaction commits; the last document's commit may land a
    # moment after the batch reads terminal through the API.
    deadline = time.monotonic() + 10
    while True:
        after = samples(client)
        succeeded = value(after, "docflow_documents_total", status="SUCCEEDED", code="")
        failed = value(after, "docflow_documents_total", status="FAILED", code="corrupt_file")
        done = succeeded - value(before, "docflow_documents_total", status="SUCCEEDED", code="")
        bad = failed - value(
            before, "docflow_documents_total", status="FAILED", code="corrupt_file"
        )
        if (done, bad) == (2, 1) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert (done, bad) == (2, 1)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    steps = "docflow_step_duration_seconds_count"
    assert delta(steps, step="document.extract", outcome="ok") == 3
    assert delta(steps, step="document.persist", outcome="ok") == 3
    stages = "docflow_extraction_stage_seconds_count"
    assert delta(stages, stage="read", engine="text_layer") == 2
    assert delta(stages, stage="locate", engine="engine") == 2
    # Read from the database at scrape time (the documents queue is empty again by now).
    assert value(after, "docflow_metrics_source_up", source="queues") == 1
    assert ("docflow_outbox_lag_seconds", ()) in after
    assert ("docflow_dead_letters", ()) in after


def test_a_waiting_batch_shows_in_the_queue_backlog_with_its_tenant(
    api_settings: Settings, engine: Engine, app: object, tenant_key_a: ApiTenant
) -> None:
    # An app with no runtime only enqueues: the started batch waits on its queue.
    settings = api_settings.model_copy(update={"metrics_cache_seconds": 0.0})
    with TestClient(create_app(settings, engine=engine)) as client:
        objects = make_objects(client, tenant_key_a)
        before = samples(client)
        started = client.post(
            f"/v1/batches/{objects.batch['id']}/start", headers=tenant_key_a.headers
        )
        assert started.status_code == 202, started.text
        after = samples(client)
    queue = BATCHES_QUEUE
    grew = value(after, "docflow_queue_depth", queue=queue) - value(
        before, "docflow_queue_depth", queue=queue
    )
    assert grew == 1
    tenant = tenant_key_a.tenant_id
    assert value(after, "docflow_queue_tenant_depth", queue=queue, tenant=tenant) == 1
    assert value(after, "docflow_queue_oldest_age_seconds", queue=queue) >= 0


def test_counts_wait_for_the_commit(session_factory: sessionmaker[Session]) -> None:
    counter = DOCUMENTS.labels(status="SUCCEEDED", code="test-commit")
    start = counter._value.get()
    with session_factory() as session:
        count_after_commit(session, DOCUMENTS, status="SUCCEEDED", code="test-commit")
        with session.begin_nested():
            count_after_commit(session, DOCUMENTS, status="SUCCEEDED", code="test-commit")
        assert counter._value.get() == start  # a released SAVEPOINT commits nothing yet
        session.commit()
    assert counter._value.get() == start + 2
    with session_factory() as session:
        session.connection()  # the transaction the count belongs to
        count_after_commit(session, DOCUMENTS, status="SUCCEEDED", code="test-commit")
        session.rollback()
        session.commit()
    assert counter._value.get() == start + 2
