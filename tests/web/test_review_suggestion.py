"""The review page shows a language model's correction with the engine's value beside it."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.documents.repository import DocumentRepository
from support.console_fixtures import Console, csrf, sign_in
from support.review_fixtures import extraction_result


def test_the_review_form_shows_the_engines_value_beside_the_models(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    first = console.documents[0]
    result = extraction_result()
    result["fields"]["total"] = {
        "name": "total",
        "value": "60.00",
        "raw": "60.00",
        "confidence": 0.79,
        "errors": [],
        "reading": "llm",
        "locator": "llm",
        "needs_review": True,
        "alternative": {"value": "55.10", "raw": "55.10", "confidence": 0.62},
    }
    with session_factory.begin() as session:
        documents = DocumentRepository(session, console.tenant_id)
        document = documents.get(first)
        assert document is not None
        assert documents.compare_and_set(first, expected_version=document.version, result=result)
    sign_in(browser, console.emails["reviewer"])
    token = csrf(browser.get("/console/review").text)
    assert browser.post(f"/console/review/{first}/claim", data={"csrf_token": token}).is_redirect
    form = browser.get(f"/console/review/{first}").text
    assert 'name="field.total" data-field="total" value="60.00"' in form
    assert "the engine read <code>55.10</code> (62%)" in form
    assert '<dd data-info="alternative">55.10 (62%)</dd>' in form
