"""The console's usage page over HTTP: the plan, its limits and the month's documents and
pages (the quotas service), and the language-model calls per day and model (the llm service),
for every member and only of their own tenant."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.kit.clock import utcnow
from docflow.llm import service as llm_service
from docflow.llm.config import LlmConfig, Price
from docflow.llm.provider import Usage
from docflow.quotas import service as quotas_service
from support.console_fixtures import Console, make_console, sign_in

CONFIG = LlmConfig(
    provider="openai",
    models={"standard": "gap-model"},
    prices={"gap-model": Price(Decimal(2), Decimal("0.5"), Decimal(8))},
)


def _used(factory: sessionmaker[Session], tenant_id: str, *, pages: int, model: str) -> None:
    call = llm_service.CallRecord("prj_1", "bat_1", "doc_1", "extract", "openai", model, "standard")
    usage = Usage(input_tokens=1_000_000, cached_tokens=500_000, output_tokens=100_000)
    with factory.begin() as session:
        quotas_service.count_pages(session, tenant_id, pages=pages)
        llm_service.record_call(
            session, tenant_id, CONFIG, replace(call, usage=usage), now=utcnow()
        )
        hit = replace(call, cache_hit=True, attempts=0)  # an answer from the cache, no call
        llm_service.record_call(session, tenant_id, CONFIG, hit, now=utcnow())


def test_a_viewer_sees_the_plan_the_months_use_and_the_model_calls(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other = make_console(session_factory)
    _used(session_factory, console.tenant_id, pages=7, model="gap-model")
    _used(session_factory, other.tenant_id, pages=5, model="other-model")
    sign_in(browser, console.emails["viewer"])
    answer = browser.get("/console/usage")
    assert answer.status_code == 200
    text = answer.text
    assert '<strong id="plan">free</strong>' in text
    assert '<tr><th scope="row">Pages</th><td>7</td>' in text
    assert utcnow().strftime("%Y-%m") in text
    assert "<code>gap-model</code>" in text and "2.05" in text and "1,000,000" in text
    assert '<td id="llm-calls">1</td><td id="llm-cache-hits">1</td>' in text
    assert "other-model" not in text  # another tenant's calls


def test_without_calls_the_page_says_so(browser: TestClient, console: Console) -> None:
    sign_in(browser, console.emails["reviewer"])
    answer = browser.get("/console/usage")
    assert answer.status_code == 200 and "No language-model call." in answer.text
    assert '<tr><th scope="row">Documents</th><td>0</td>' in answer.text
    running = '<tr><th scope="row">Documents running now</th><td>0</td><td>no limit</td>'
    assert running in answer.text
