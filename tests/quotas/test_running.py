"""A plan's `concurrent_documents` and `reserved_slots` on the launched runtime (the real queues
of the test database): a tenant's documents beyond its limit wait on the queue, in order, and
all finish; a reserved plan's tenant gets its documents done while another tenant's big batch
holds every shared slot and the rest of it waits. The running count is observed from inside the
document flow's first step (`documents.steps.extract`, wrapped), held open by a gate the test
releases, so nothing here depends on timing."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS

from docflow import db
from docflow.config import Plan, Settings
from docflow.documents import steps as document_steps
from docflow.documents.flows import LAUNCH
from docflow.documents.service import flow_id
from docflow.quotas.service import plan_queue
from docflow.tenants import service as tenants_service
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    invoice_pdf,
    launched_env,
    submit,
    wait_terminal,
)
from support.process_fixtures import wait_for

GATE_TIMEOUT_S = 60.0


class Recorder:
    """Wraps the extract step: counts each tenant's documents inside it (the most at once),
    records the order they entered, and holds the documents of the tenants in `held` until
    `release`."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self._real = real
        self._lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.started: list[str] = []
        self.held: set[str] = set()
        self.gate = threading.Event()

    def __call__(self, services: Any, *, tenant_id: str, document_id: str) -> Any:
        with self._lock:
            self.running[tenant_id] += 1
            self.most[tenant_id] = max(self.most[tenant_id], self.running[tenant_id])
            self.started.append(document_id)
            held = tenant_id in self.held
        try:
            if held:
                self.gate.wait(GATE_TIMEOUT_S)
            return self._real(services, tenant_id=tenant_id, document_id=document_id)
        finally:
            with self._lock:
                self.running[tenant_id] -= 1

    def release(self) -> None:
        self.gate.set()


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    found = Recorder(document_steps.extract)
    monkeypatch.setattr(document_steps, "extract", found)
    yield found
    found.release()


@contextmanager
def runtime(tmp_path: Path, plans: dict[str, Plan], **settings: Any) -> Iterator[DbosEnv]:
    with launched_env(tmp_path, plans=plans, **settings) as env:
        yield env


def tenant_on(env: DbosEnv, plan: str) -> Setup:
    tenant = env.tenant()
    # read-then-write while the runtime writes: begin IMMEDIATE on SQLite, as the services do
    with db.make_write_session_factory(env.engine)() as session:
        tenants_service.get_tenant(session, tenant.tenant_id).plan = plan
        session.commit()
    project = post_project(env.client, tenant)
    workflow = post_workflow(env.client, tenant, project["id"])
    return Setup(env, tenant, project["id"], workflow["id"])


def pdfs(count: int, prefix: str) -> list[tuple[str, str, bytes]]:
    return [
        (f"{prefix}-{i}.pdf", "application/pdf", invoice_pdf(f"{prefix}-{i}", "10.00"))
        for i in range(count)
    ]


def flow_status(document_id: str) -> str:
    status = DBOS.get_workflow_status(flow_id(document_id))
    assert status is not None
    return status.status


def usage(setup: Setup) -> dict[str, Any]:
    return ok(setup.env.client.get("/v1/usage", headers=setup.tenant.headers), 200)


def test_a_tenant_never_runs_more_than_its_concurrent_documents_and_the_rest_wait_in_order(
    tmp_path: Path, recorder: Recorder
) -> None:
    plans = {"free": Plan(), "capped": Plan(concurrent_documents=2)}
    with runtime(tmp_path, plans, max_concurrency=8, worker_concurrency=8) as env:
        capped = tenant_on(env, "capped")
        recorder.held.add(capped.tenant.tenant_id)
        batch = submit(capped, pdfs(7, "cap"))
        ids = [d["id"] for d in batch["documents"]]
        wait_for(lambda: len(recorder.started) == 2, timeout=30, what="two documents started")
        # Held at its limit: the others wait on the queue (not failed), and usage says so.
        found = usage(capped)
        assert found["running"] == {"documents": 2, "limit": 2}
        assert found["limits"]["concurrent_documents"] == 2
        assert sorted(recorder.started) == sorted(ids[:2])
        assert [flow_status(i) for i in ids[2:]] == ["ENQUEUED"] * 5
        recorder.release()
        done = wait_terminal(capped, batch["id"])
        assert done["status"] == "SUCCEEDED"
        assert {d["status"] for d in documents(capped, batch["id"])} == {"SUCCEEDED"}
        assert recorder.most[capped.tenant.tenant_id] == 2
        # In the order they were enqueued, but for the two that start together.
        assert sorted(recorder.started) == sorted(ids)
        assert all(abs(recorder.started.index(d) - n) < 2 for n, d in enumerate(ids))
        assert usage(capped)["running"]["documents"] == 0


def test_a_reserved_plan_s_batch_finishes_while_another_tenant_holds_every_shared_slot(
    tmp_path: Path, recorder: Recorder
) -> None:
    plans = {"free": Plan(), "reserved": Plan(reserved_slots=1)}
    # One shared slot per worker: the noisy tenant's first document holds it (gated), so
    # without a reservation nobody else's document can start until it lets go.
    with runtime(tmp_path, plans, max_concurrency=4, worker_concurrency=1) as env:
        noisy, bystander = tenant_on(env, "free"), tenant_on(env, "free")
        reserved = tenant_on(env, "reserved")
        recorder.held.add(noisy.tenant.tenant_id)
        big = submit(noisy, pdfs(30, "noisy"))
        big_ids = [d["id"] for d in big["documents"]]
        wait_for(lambda: len(recorder.started) == 1, timeout=30, what="the noisy batch started")
        waiting = submit(bystander, pdfs(1, "bystander"))
        small = submit(reserved, pdfs(3, "reserved"))

        done = wait_terminal(reserved, small["id"])
        assert done["status"] == "SUCCEEDED"
        assert {d["status"] for d in documents(reserved, small["id"])} == {"SUCCEEDED"}
        # Meanwhile the noisy batch had one document running and all the others queued, and
        # the free-plan bystander's document had not started.
        assert [flow_status(i) for i in big_ids[1:]] == ["ENQUEUED"] * 29
        assert flow_status(waiting["documents"][0]["id"]) == "ENQUEUED"
        assert recorder.started[0] == big_ids[0]
        assert all(i not in recorder.started for i in big_ids[1:])

        recorder.release()
        assert wait_terminal(noisy, big["id"], timeout=120)["status"] == "SUCCEEDED"
        assert wait_terminal(bystander, waiting["id"])["status"] == "SUCCEEDED"
        assert recorder.most[reserved.tenant.tenant_id] == 1


def test_plans_with_a_limit_or_a_reservation_get_a_queue_of_their_own() -> None:
    plans = {
        "free": Plan(requests_per_second=5),
        "capped": Plan(concurrent_documents=3),
        "reserved": Plan(reserved_slots=2, concurrent_documents=50),
    }
    settings = Settings(env="test", plans=plans, max_concurrency=16, worker_concurrency=8)
    found = {q.name: q for q in LAUNCH.queues(settings)}
    assert sorted(found) == ["documents", "documents:capped", "documents:reserved"]
    shared, capped, reserved = (found[n] for n in sorted(found))
    assert (shared.worker_concurrency, shared.partition_concurrency) == (8, 16)
    assert shared.partition_worker_concurrency == 6
    assert (capped.worker_concurrency, capped.partition_concurrency) == (8, 3)
    assert capped.partition_worker_concurrency == 3
    assert (reserved.worker_concurrency, reserved.partition_concurrency) == (2, 16)
    assert reserved.partition_worker_concurrency == 1
    assert {q.global_concurrency for q in found.values()} == {16}
    # A tenant's plan names its queue; a plan the settings lack is the default plan's.
    assert plan_queue(settings, "free") == "documents"
    assert plan_queue(settings, "capped") == "documents:capped"
    assert plan_queue(settings, "gone") == "documents"
