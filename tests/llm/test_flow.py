"""The gap-fill through the real document flow on real DBOS, against the local model server
over the OpenAI protocol: a field OCR could not find is filled by the model from the lines
sent, grounded, with its provenance; the same document again makes no call; a provider that
stays down and a spent budget leave the fields as OCR found them, with the reason, and never
a stuck or failed batch; a budget of N calls stops at N under concurrent documents."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas
from typer.testing import CliRunner

from docflow.cli import app
from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.repository import OutboxRepository
from docflow.kit.clock import utcnow
from docflow.llm import service
from docflow.llm.models import LlmCall
from docflow.llm.repository import LlmRepository
from docflow.runtime import context
from support.api_fixtures import ok, post_project
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    launched_env,
    submit,
    wait_terminal,
)
from support.llm_server import ModelServer, serving_model

PDF = "application/pdf"
WORKFLOW = {
    "name": "purchase invoices",
    "complexity_tier": "standard",
    "fields": [
        {"name": "invoice_number", "locators": [{"kind": "label", "labels": ["Invoice No"]}]},
        {"name": "total", "type": "money", "locators": [{"kind": "label", "labels": ["Total"]}]},
        {
            # a region drawn where nothing is printed: OCR finds nothing, the label is there
            "name": "po_number",
            "required": False,
            "locators": [{"kind": "region", "box": {"x0": 0.6, "y0": 0.9, "x1": 0.9, "y1": 0.95}}],
        },
    ],
    "confidence_threshold": 0.5,
    "review_threshold": 0.8,
    # Decided by the thresholds until reviews measure the fields (earned trust is not the
    # subject here).
    "cold_start": "thresholds",
}


def purchase_invoice(po: str) -> bytes:
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 12)
    for y, text in [
        (60, "Blue Harbour Trading Ltd"),
        (120, "Invoice No: INV-1"),
        (300, "Total: 55.10"),
        (400, "Deposit paid: 60.00"),
        (500, f"PO Number: {po}"),
        (700, "Thank you for your business"),
    ]:
        pdf.drawString(50, A4[1] - y, text)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    with serving_model() as server:
        yield server


@pytest.fixture(scope="module")
def llm_env(tmp_path_factory: pytest.TempPathFactory, model: ModelServer) -> Iterator[DbosEnv]:
    with launched_env(
        tmp_path_factory.mktemp("llm"),
        llm_provider="openai",
        llm_base_url=f"{model.url}/v1",
        llm_model_simple="m-simple",
        llm_model_standard="m-standard",
        llm_model_complex="m-complex",
        llm_prices={"m-standard": (1.0, 0.1, 4.0)},
        llm_max_attempts=2,
    ) as env:
        yield env


@pytest.fixture
def llm_setup(llm_env: DbosEnv, model: ModelServer) -> Iterator[Setup]:
    tenant = llm_env.tenant()
    project = post_project(llm_env.client, tenant)
    url = f"/v1/projects/{project['id']}/workflows"
    workflow = ok(llm_env.client.post(url, json=WORKFLOW, headers=tenant.headers), 201)
    model.state.down = False
    model.state.faults.clear()
    model.state.answers.clear()
    model.state.delay_seconds = 0.0
    yield Setup(llm_env, tenant, project["id"], workflow["id"])
    context.services().settings = llm_env.settings


def _run(setup: Setup, *pos: str) -> list[dict[str, Any]]:
    files = [(f"{i}-{p}.pdf", PDF, purchase_invoice(p)) for i, p in enumerate(pos)]
    batch = submit(setup, files)
    assert wait_terminal(setup, batch["id"])["status"] in ("SUCCEEDED", "REVIEW_REQUIRED")
    client, headers = setup.env.client, setup.tenant.headers
    return [
        ok(client.get(f"/v1/documents/{d['id']}", headers=headers), 200)
        for d in documents(setup, batch["id"])
    ]


def _calls(setup: Setup) -> list[LlmCall]:
    with setup.env.session_factory() as session:
        stmt = LlmRepository(session, setup.tenant.tenant_id).base(LlmCall).order_by(LlmCall.id)
        return list(session.scalars(stmt))


def test_a_missing_field_is_filled_from_the_lines_sent(
    llm_setup: Setup, model: ModelServer
) -> None:
    before = model.state.calls("openai")
    (document,) = _run(llm_setup, "PO-7781")
    field = document["result"]["fields"]["po_number"]
    assert field["value"] == "PO-7781" and field["reading"] == "llm"
    assert field["llm"]["tier"] == "standard" and field["llm"]["model"] == "m-standard"
    # a value only the model read, of an optional field: capped under review_threshold and
    # the document held for review (the engine alone would have passed it)
    assert field["llm"]["grounded"] is True and field["llm"]["calibrated"] >= 0.8
    assert field["confidence"] == 0.79 and field["needs_review"] is True
    assert document["status"] == "REVIEW_REQUIRED" and document["confidence"] == 0.79
    assert "po_number: a language model's value" in document["error_reason"]
    assert field["box"]["y0"] == pytest.approx(0.58, abs=0.01)
    assert document["result"]["fields"]["total"]["reading"] == "text_layer"
    # one call, for exactly the missing field, with a few lines and not the whole text
    assert model.state.calls("openai") == before + 1
    _, body = model.state.requests[-1]
    schema = body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["po_number"]
    request = body["messages"][1]["content"]
    assert "PO Number: PO-7781" in request and "Blue Harbour" not in request
    (call,) = _calls(llm_setup)
    assert (call.task, call.tier, call.model, call.cache_hit) == (
        "extract",
        "standard",
        "m-standard",
        False,
    )
    assert call.input_tokens > 0 and call.output_tokens > 0 and call.cost > 0


def test_calls_tokens_and_cost_are_in_the_metrics(llm_setup: Setup, model: ModelServer) -> None:
    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    who = {"provider": "openai", "model": "m-standard"}
    answered = {**who, "task": "extract", "outcome": "answered"}
    before = (
        sample("docflow_llm_calls_total", **answered),
        sample("docflow_llm_tokens_total", **who, kind="input"),
        sample("docflow_llm_cost_total", **who),
    )
    _run(llm_setup, "PO-4242")
    (call,) = [c for c in _calls(llm_setup) if c.document_id and not c.cache_hit][-1:]
    after = (
        sample("docflow_llm_calls_total", **answered),
        sample("docflow_llm_tokens_total", **who, kind="input"),
        sample("docflow_llm_cost_total", **who),
    )
    assert after[0] - before[0] == 1
    assert after[1] - before[1] == call.input_tokens
    assert after[2] - before[2] == pytest.approx(float(call.cost))


def test_the_same_document_again_makes_no_call(llm_setup: Setup, model: ModelServer) -> None:
    _run(llm_setup, "PO-1000")
    before = model.state.calls()
    (document,) = _run(llm_setup, "PO-1000")
    assert model.state.calls() == before
    assert document["result"]["fields"]["po_number"]["value"] == "PO-1000"
    assert document["result"]["llm"]["cache_hits"] == 1
    assert [c.cache_hit for c in _calls(llm_setup)] == [False, True]


def test_a_provider_that_stays_down_leaves_the_fields_as_ocr_found_them(
    llm_setup: Setup, model: ModelServer
) -> None:
    model.state.down = True
    (document,) = _run(llm_setup, "PO-2000")
    assert document["status"] == "SUCCEEDED"
    assert document["result"]["fields"]["po_number"]["value"] is None
    assert document["result"]["llm"]["status"] == "llm_unavailable"
    assert "llm_unavailable" in document["result"]["reasons"][0]
    (call,) = _calls(llm_setup)
    assert call.error and call.attempts == 2


def test_a_budget_of_n_calls_stops_at_n_under_concurrency(
    llm_setup: Setup, model: ModelServer
) -> None:
    tenant_id = llm_setup.tenant.tenant_id
    settings = llm_setup.env.settings
    context.services().settings = settings.model_copy(update={"llm_monthly_calls": {tenant_id: 3}})
    results = _run(llm_setup, *(f"PO-3{i:03d}" for i in range(8)))
    calls = _calls(llm_setup)
    assert len(calls) == 3 and not any(c.cache_hit for c in calls)
    filled = [d for d in results if d["result"]["fields"]["po_number"]["value"] is not None]
    exhausted = [d for d in results if d["result"]["llm"]["status"] == "llm_budget_exhausted"]
    assert len(filled) == 3 and len(exhausted) == 5
    assert all(d["status"] == "REVIEW_REQUIRED" for d in filled)  # model-only values
    assert all(d["status"] == "SUCCEEDED" for d in exhausted)
    assert all("llm_budget_exhausted" in d["error_reason"] for d in exhausted)
    with llm_setup.env.session_factory() as session:
        scoped = OutboxRepository(session, tenant_id).base(OutboxEvent)
        events = session.scalars(
            scoped.where(OutboxEvent.type == envelopes.LLM_BUDGET_WARNING)
        ).all()
    assert [e.data["calls"] for e in events] == [3]


def test_usage_through_the_api_and_the_command_line(
    llm_setup: Setup, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    budget = {"llm_monthly_calls": {llm_setup.tenant.tenant_id: 10}}
    context.services().settings = llm_setup.env.settings.model_copy(update=budget)
    _run(llm_setup, "PO-4000")
    _run(llm_setup, "PO-4000")
    client, headers = llm_setup.env.client, llm_setup.tenant.headers
    usage = ok(client.get("/v1/usage/llm", headers=headers), 200)
    (row,) = usage["items"]
    # one call made, one answer from the cache: counted apart, as the budget counts calls
    assert (row["model"], row["provider"], row["calls"], row["cache_hits"]) == (
        "m-standard",
        "openai",
        1,
        1,
    )
    assert row["input_tokens"] > 0 and Decimal(row["cost"]) > 0
    assert (usage["calls"], usage["cache_hits"]) == (1, 1)
    assert Decimal(usage["cost"]) == Decimal(row["cost"])
    with llm_setup.env.session_factory() as session:
        month = service.month_of(utcnow())
        assert LlmRepository(session, llm_setup.tenant.tenant_id).calls_in(month) == 1
    params = {"project_id": "prj_none"}
    assert ok(client.get("/v1/usage/llm", params=params, headers=headers), 200)["items"] == []
    future = {"since": "2999-01-01T00:00:00Z"}
    assert ok(client.get("/v1/usage/llm", params=future, headers=headers), 200)["calls"] == 0
    for bad in ({"since": "yesterday"}, {"since": "2026-01-01T00:00:00"}, {"page": "1"}):
        response = client.get("/v1/usage/llm", params=bad, headers=headers)
        assert response.status_code == 422, bad
        assert response.headers["content-type"].startswith("application/problem+json")
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", llm_setup.env.settings.database_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")
    result = CliRunner().invoke(
        app, ["usage", "llm", "--tenant", llm_setup.tenant.tenant_id, "--json"]
    )
    assert result.exit_code == 0, result.output
    (item,) = json.loads(result.stdout)["items"]  # logs of the running runtime go to stderr
    assert item["calls"] == 1 and item["cache_hits"] == 1 and item["cost"] == row["cost"]
    assert (json.loads(result.stdout)["calls"], json.loads(result.stdout)["cache_hits"]) == (1, 1)
    table = CliRunner().invoke(app, ["usage", "llm", "--tenant", llm_setup.tenant.tenant_id])
    assert "m-standard" in table.output and row["day"] in table.output


def test_transient_errors_are_retried_inside_the_step(llm_setup: Setup, model: ModelServer) -> None:
    model.state.faults.extend(["429"])
    (document,) = _run(llm_setup, "PO-5000")
    assert document["result"]["fields"]["po_number"]["value"] == "PO-5000"
    (call,) = _calls(llm_setup)
    assert call.attempts == 2 and call.error is None


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_the_other_protocols_through_the_flow(
    llm_setup: Setup, model: ModelServer, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    context.services().settings = llm_setup.env.settings.model_copy(
        update={"llm_provider": provider, "llm_base_url": model.url, "llm_api_key": "k"}
    )
    before = model.state.calls(provider)
    (document,) = _run(llm_setup, f"PO-{provider}")
    field = document["result"]["fields"]["po_number"]
    assert field["value"] == f"PO-{provider}" and field["llm"]["provider"] == provider
    assert model.state.calls(provider) == before + 1
    (call,) = _calls(llm_setup)
    assert call.provider == provider and call.input_tokens > 0


def test_an_answer_not_in_the_document_never_reaches_results_or_exports(
    llm_setup: Setup, model: ModelServer
) -> None:
    model.state.answers["po_number"] = "PO-999999"  # printed nowhere
    (document,) = _run(llm_setup, "PO-6000")
    field = document["result"]["fields"]["po_number"]
    assert field["value"] is None and field["llm"]["dropped"] == "not found in the document's text"
    assert "999999" not in json.dumps(document)
    assert "llm_dropped: po_number" in document["error_reason"]
    client, headers = llm_setup.env.client, llm_setup.tenant.headers
    url = f"/v1/batches/{document['batch_id']}/export"
    for kind in ("csv", "jsonl"):
        exported = client.get(url, params={"format": kind}, headers=headers)
        assert exported.status_code == 200 and "999999" not in exported.text


CORRECTED = {
    "name": "doubted totals",
    "fields": [
        {"name": "total", "type": "money", "locators": [{"kind": "label", "labels": ["Total"]}]}
    ],
    "confidence_threshold": 0.5,
    "review_threshold": 0.999,  # the engine's reading of the total stays doubted
}


def test_a_grounded_answer_that_disagrees_corrects_the_doubted_value_for_review(
    llm_setup: Setup, model: ModelServer
) -> None:
    client, headers = llm_setup.env.client, llm_setup.tenant.headers
    url = f"/v1/projects/{llm_setup.project_id}/workflows"
    workflow = ok(client.post(url, json=CORRECTED, headers=headers), 201)
    setup = Setup(llm_setup.env, llm_setup.tenant, llm_setup.project_id, workflow["id"])
    model.state.answers["total"] = "60.00"  # printed, on another line than the label's
    (document,) = _run(setup, "PO-7000")
    total = document["result"]["fields"]["total"]
    assert total["value"] == "60.00" and total["reading"] == "llm" and total["needs_review"]
    assert total["alternative"]["value"] == "55.10"
    assert total["alternative"]["reading"] == "text_layer"
    assert total["llm"]["task"] == "verify" and total["confidence"] < 0.999
    assert document["status"] == "REVIEW_REQUIRED"
    claimed = ok(client.post("/v1/review/next", headers=headers), 200)["document"]
    read = ok(client.get(f"/v1/documents/{claimed['id']}", headers=headers), 200)
    shown = read["result"]["fields"]["total"]
    assert (shown["value"], shown["alternative"]["value"]) == ("60.00", "55.10")


def test_an_identical_rerun_makes_no_call_whatever_ocr_and_the_gaps_do(
    llm_setup: Setup, model: ModelServer
) -> None:
    """The same file twice in one batch while the model is slow (two documents asking the
    same question at once), then the batch again: one call in all."""
    model.state.delay_seconds = 0.5
    before = model.state.calls()
    first = _run(llm_setup, *(["PO-8000"] * 4))
    assert model.state.calls() == before + 1
    again = _run(llm_setup, *(["PO-8000"] * 4))
    assert model.state.calls() == before + 1
    values = {d["result"]["fields"]["po_number"]["value"] for d in [*first, *again]}
    assert values == {"PO-8000"}
