"""Batch executions end to end through HTTP, on real DBOS and the real engine: uploads start the
batch by themselves, the start endpoint is exactly-once, and the batch status and counters come
out right."""

from __future__ import annotations

import concurrent.futures

import pytest
from dbos import DBOS, EnqueueOptions

from docflow.batches.steps import begin_batch
from docflow.documents.service import DOCUMENT_FLOW
from docflow.reconciler.steps import reconcile
from docflow.runtime import context
from docflow.runtime.context import BATCHES_QUEUE, DOCUMENTS_QUEUE
from support.api_fixtures import ok
from support.dbos_fixtures import (  # noqa: F401
    Setup,
    create_batch,
    dbos_env,
    documents,
    get_batch,
    invoice_pdf,
    scanned_invoice,
    setup,
    submit,
    upload_path,
    wait_terminal,
)

PDF = "application/pdf"


@pytest.mark.tesseract
def test_uploads_start_the_batch_and_every_document_succeeds(setup: Setup) -> None:  # noqa: F811
    files = [(f"inv-{i}.pdf", PDF, invoice_pdf(f"INV-{i:04d}", f"{100 + i}.50")) for i in range(4)]
    files.append(("scan.PNG", "image/png", scanned_invoice("INV-9001", "77.10")))
    files.append(("photo.JPG", "image/jpeg", scanned_invoice("INV-9002", "8.25", "JPEG")))
    batch = submit(setup, files)
    done = wait_terminal(setup, batch["id"])
    docs = documents(setup, batch["id"])
    assert done["status"] == "SUCCEEDED", docs
    assert (done["succeeded_count"], done["failed_count"], done["review_count"]) == (6, 0, 0)
    assert done["uploaded_count"] == 6 and done["started_at"] and done["completed_at"]
    detail = ok(
        setup.env.client.get(f"/v1/documents/{docs[0]['id']}", headers=setup.tenant.headers), 200
    )
    assert detail["result"]["fields"]["invoice_number"]["value"] == "INV-0000"
    assert detail["result"]["fields"]["total"]["value"] == "100.50"
    assert {d["detected_type"] for d in docs} == {"pdf", "png", "jpeg"}
    scans = {d["name"]: d["id"] for d in docs if d["detected_type"] != "pdf"}
    photo = ok(
        setup.env.client.get(f"/v1/documents/{scans['photo.JPG']}", headers=setup.tenant.headers),
        200,
    )
    assert photo["result"]["text_source"] == "ocr"
    assert photo["result"]["fields"]["total"]["value"] == "8.25"
    # One execution: the batch flow under the batch's id, one document flow per document, and
    # one completion. The batch's row is terminal a moment before DBOS records the completion's
    # end: wait for that.
    completion_id = f"complete:{batch['id']}"
    assert DBOS.retrieve_workflow(completion_id).get_result() == "SUCCEEDED"
    flows = DBOS.list_workflows(workflow_ids=[batch["id"], completion_id])
    assert [f.status for f in flows] == ["SUCCESS", "SUCCESS"]
    assert {f.queue_name for f in flows} == {BATCHES_QUEUE}
    assert {f.queue_partition_key for f in flows} == {setup.tenant.tenant_id}
    child_ids = [f"doc:{d['id']}" for d in docs]
    for child_id in child_ids:  # recorded as ended a moment after their last commit
        DBOS.retrieve_workflow(child_id).get_result()
    children = DBOS.list_workflows(workflow_ids=child_ids)
    assert len(children) == len(docs) and {c.status for c in children} == {"SUCCESS"}
    assert {c.queue_name for c in children} == {DOCUMENTS_QUEUE}
    assert {c.queue_partition_key for c in children} == {setup.tenant.tenant_id}


def test_start_called_five_times_concurrently_runs_one_execution(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-1", "10.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf)), ("b.pdf", PDF, len(pdf))])
    ok(setup.env.client.put(upload_path(batch["documents"][0]["upload_url"]), content=pdf), 200)
    url = f"/v1/batches/{batch['id']}/start"
    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        calls = [
            pool.submit(setup.env.client.post, url, headers=setup.tenant.headers) for _ in range(5)
        ]
        answers = [c.result() for c in calls]
    assert [a.status_code for a in answers] == [202] * 5, [a.text for a in answers]
    done = wait_terminal(setup, batch["id"])
    assert len(DBOS.list_workflows(workflow_ids=[batch["id"]])) == 1
    flows = DBOS.list_workflows(workflow_ids=[f"doc:{d['id']}" for d in batch["documents"]])
    assert len(flows) == 1  # only the landed one
    docs = {d["name"]: d for d in documents(setup, batch["id"])}
    assert docs["a.pdf"]["status"] == "SUCCEEDED"
    assert (docs["b.pdf"]["status"], docs["b.pdf"]["error_code"]) == ("FAILED", "not_uploaded")
    # 1 of 2 failed is over the default 10 % tolerance.
    assert (done["status"], done["succeeded_count"], done["failed_count"]) == ("FAILED", 1, 1)
    # Starting a finished batch again is answered, and starts nothing.
    again = ok(setup.env.client.post(url, headers=setup.tenant.headers), 202)
    assert again["status"] == "FAILED"


def test_start_of_another_tenants_batch_is_404(setup: Setup) -> None:  # noqa: F811
    pdf = invoice_pdf("INV-2", "20.00")
    batch = create_batch(setup, [("a.pdf", PDF, len(pdf))])
    stranger = setup.env.tenant()
    response = setup.env.client.post(f"/v1/batches/{batch['id']}/start", headers=stranger.headers)
    assert response.status_code == 404
    assert get_batch(setup, batch["id"])["status"] == "CREATED"
    assert DBOS.list_workflows(workflow_ids=[batch["id"]]) == []


def test_a_batch_started_before_any_upload_completes_from_its_begin(setup: Setup) -> None:  # noqa: F811
    """Every document fails `not_uploaded` at begin, so no document flow runs: the begin's own
    transaction enqueues the completion, which records the batch once."""
    batch = create_batch(setup, [("a.pdf", PDF, 10), ("b.pdf", PDF, 10)])
    url = f"/v1/batches/{batch['id']}/start"
    ok(setup.env.client.post(url, headers=setup.tenant.headers), 202)
    done = wait_terminal(setup, batch["id"])
    assert (done["status"], done["failed_count"]) == ("FAILED", 2)
    assert DBOS.list_workflows(workflow_ids=[f"doc:{d['id']}" for d in batch["documents"]]) == []
    assert DBOS.retrieve_workflow(f"complete:{batch['id']}").get_result() == "FAILED"
    steps = [s["function_name"] for s in DBOS.list_workflow_steps(f"complete:{batch['id']}")]
    assert steps == ["batch.complete"]


def test_a_document_flow_cancelled_before_its_document_finished_still_completes_its_batch(
    setup: Setup,  # noqa: F811
) -> None:
    """A document flow that ends without finishing its document (here cancelled before it
    ran) is given up by the reconciler: the document FAILS `internal_error`, which counts the
    batch's last document and so enqueues its completion."""
    pdf = invoice_pdf("INV-5", "5.00")
    batch = submit(setup, [("a.pdf", PDF, pdf)], scheduled_for="2099-01-01T00:00:00Z")
    document_id, tenant_id = batch["documents"][0]["id"], setup.tenant.tenant_id
    services = context.services()
    with services.write_session() as session, session.begin():
        begin_batch(session, services.client, batch_id=batch["id"])  # PROCESSING, no flow yet
    # The document's flow, on a queue no executor listens to, cancelled before it ran.
    parked: EnqueueOptions = {
        "workflow_name": DOCUMENT_FLOW,
        "queue_name": "parked",
        "workflow_id": f"doc:{document_id}",
    }
    services.client.enqueue(parked, tenant_id, document_id)
    DBOS.cancel_workflow(f"doc:{document_id}")
    assert get_batch(setup, batch["id"])["status"] == "PROCESSING"
    reconcile(services.client, services.write_factory, max_rewinds=3, downstream_lag_seconds=60)
    done = wait_terminal(setup, batch["id"])
    (doc,) = documents(setup, batch["id"])
    assert (doc["status"], doc["error_code"]) == ("FAILED", "internal_error")
    assert (done["status"], done["failed_count"]) == ("FAILED", 1)
    # Given up once: the next run finds nothing left to do.
    assert (
        reconcile(
            services.client, services.write_factory, max_rewinds=3, downstream_lag_seconds=60
        )["gave_up"]
        == 0
    )
    # The document is a dead letter of consumer `documents`, written once.
    url = "/v1/dead-letters?consumer=documents"
    (letter,) = ok(setup.env.client.get(url, headers=setup.tenant.headers), 200)["items"]
    assert (letter["target"], letter["category"]) == (document_id, "internal")
    assert DOCUMENT_FLOW in letter["error"]
