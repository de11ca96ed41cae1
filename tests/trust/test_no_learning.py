"""DOCFLOW_LEARNING=false on the real runtime: a new workflow's documents are decided by the
thresholds alone, and a review completes as before but teaches nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from dbos import DBOS

from support.api_fixtures import ok, post_project, workflow_body
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    invoice_pdf,
    launched_env,
    submit,
    wait_terminal,
)


@pytest.fixture(scope="module")
def quiet_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbosEnv]:
    with launched_env(tmp_path_factory.mktemp("quiet"), learning=False) as env:
        yield env


def test_without_learning_thresholds_decide_and_reviews_teach_nothing(
    quiet_env: DbosEnv,
) -> None:
    tenant = quiet_env.tenant()
    client, h = quiet_env.client, tenant.headers
    project = post_project(client, tenant)
    url = f"/v1/projects/{project['id']}/workflows"
    # A new workflow (cold_start: review) passes what its thresholds pass: no gate.
    fresh = ok(client.post(url, json=workflow_body("fresh", cold_start="review"), headers=h), 201)
    passing = Setup(quiet_env, tenant, project["id"], fresh["id"])
    batch = submit(passing, [("a.pdf", "application/pdf", invoice_pdf("INV-4", "4.00"))])
    wait_terminal(passing, batch["id"])
    assert [d["status"] for d in documents(passing, batch["id"])] == ["SUCCEEDED"]
    body = workflow_body(cold_start="review", review_threshold=0.99)
    workflow = ok(client.post(url, json=body, headers=h), 201)
    setup = Setup(quiet_env, tenant, project["id"], workflow["id"])
    batch = submit(setup, [("a.pdf", "application/pdf", invoice_pdf("INV-5", "5.00"))])
    wait_terminal(setup, batch["id"])
    [document] = documents(setup, batch["id"])
    # By review_threshold (0.99), not by trust: the reason names the threshold.
    assert document["status"] == "REVIEW_REQUIRED"
    assert "not yet trusted" not in (document["error_reason"] or "")
    ok(client.post(f"/v1/documents/{document['id']}/claim", headers=h), 200)
    review = {"decision": "approve", "fields": {"total": "6.00"}, "reason": ""}
    ok(client.post(f"/v1/documents/{document['id']}/review", json=review, headers=h), 200)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and DBOS.list_workflows(
        status=["PENDING", "ENQUEUED"], load_input=False
    ):
        time.sleep(0.1)
    trust = ok(client.get(f"/v1/workflows/{workflow['id']}/trust", headers=h), 200)
    assert trust["learning"] is False
    assert all(f["examples"] == 0 and f["decided_by"] == "thresholds" for f in trust["fields"])
