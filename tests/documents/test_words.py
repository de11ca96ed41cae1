"""`GET /v1/documents/{id}/words`: the words on a processed document's pages as the engine read
them (kept in storage when it ran), a few pages at a time; 409 `document_not_read` before it is
processed, 404 `words_not_kept` when they were not kept, 404 for another tenant's document."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from docflow.documents.keys import words_key
from docflow.extraction import words
from docflow.tenants import passwords
from docflow.tenants import service as tenants_service
from support.api_fixtures import ok
from support.console_fixtures import PASSWORD, sign_in
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    create_batch,
    dbos_env,
    scanned_invoice,
    setup,
    submit,
    wait_terminal,
)

PDF = "application/pdf"
WIDTH, HEIGHT = A4


def three_pages() -> bytes:
    """A text PDF of three pages: the invoice's fields on the first, a line on each other."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 12)
    pdf.drawString(50, HEIGHT - 120, "Invoice No: INV-77")
    pdf.drawString(50, HEIGHT - 300, "Total: 77.00")
    pdf.showPage()
    for number in (2, 3):
        pdf.setFont("Helvetica", 12)
        pdf.drawString(100, HEIGHT - 200, f"Page {number} notes")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def words_of(setup: Setup, document_id: str, **params: Any) -> Any:  # noqa: F811
    url = f"/v1/documents/{document_id}/words"
    return setup.env.client.get(url, params=params, headers=setup.tenant.headers)


def test_the_words_of_a_text_pdf_come_page_by_page(setup: Setup) -> None:  # noqa: F811
    batch = submit(setup, [("three.pdf", PDF, three_pages())])
    wait_terminal(setup, batch["id"])
    document_id = batch["documents"][0]["id"]
    first = ok(words_of(setup, document_id, limit=2), 200)
    assert first["document_id"] == document_id
    assert [p["page"] for p in first["pages"]] == [1, 2]
    page = first["pages"][0]
    assert (page["width"], page["height"], page["engine"]) == (
        pytest.approx(WIDTH),
        pytest.approx(HEIGHT),
        "text_layer",
    )
    assert [w["text"] for w in page["words"]] == ["Invoice", "No:", "INV-77", "Total:", "77.00"]
    invoice = page["words"][0]
    assert invoice["confidence"] == 1.0
    x0, y0, x1, y1 = invoice["box"]
    # Drawn at x 50 pt, baseline 120 pt below the top, 12 pt Helvetica.
    assert x0 == pytest.approx(50 / WIDTH, abs=0.005)
    assert y0 < 120 / HEIGHT < y1
    assert y1 - y0 == pytest.approx(12 / HEIGHT, abs=0.01)
    assert x0 < x1 < page["words"][1]["box"][0]
    assert page["words"][3]["box"][1] > 300 / HEIGHT - 0.02
    assert [w["text"] for w in first["pages"][1]["words"]] == ["Page", "2", "notes"]
    assert first["next_cursor"]
    rest = ok(words_of(setup, document_id, limit=2, cursor=first["next_cursor"]), 200)
    assert [p["page"] for p in rest["pages"]] == [3]
    assert [w["text"] for w in rest["pages"][0]["words"]] == ["Page", "3", "notes"]
    assert rest["next_cursor"] is None
    everything = ok(words_of(setup, document_id), 200)
    assert [p["page"] for p in everything["pages"]] == [1, 2, 3]
    assert everything["next_cursor"] is None
    # Deleted with the document.
    storage = setup.env.client.app.state.storage  # type: ignore[attr-defined]
    key = words_key(setup.tenant.tenant_id, document_id)
    assert storage.head(key) is not None
    url = f"/v1/documents/{document_id}"
    assert setup.env.client.delete(url, headers=setup.tenant.headers).status_code == 204
    assert storage.head(key) is None


def test_words_before_processing_of_another_tenant_or_not_kept(setup: Setup) -> None:  # noqa: F811
    waiting = create_batch(setup, [("later.pdf", PDF, 10)])["documents"][0]["id"]
    early = words_of(setup, waiting)
    assert (early.status_code, early.json()["code"]) == (409, "document_not_read")
    assert early.headers["content-type"].startswith("application/problem+json")
    batch = submit(setup, [("three.pdf", PDF, three_pages())])
    wait_terminal(setup, batch["id"])
    document_id = batch["documents"][0]["id"]
    other = setup.env.tenant()
    foreign = setup.env.client.get(f"/v1/documents/{document_id}/words", headers=other.headers)
    assert (foreign.status_code, foreign.json()["code"]) == (404, "not_found")
    bad = words_of(setup, document_id, cursor="not-a-cursor")
    assert (bad.status_code, bad.json()["errors"][0]["field"]) == (422, "cursor")
    assert words_of(setup, document_id, limit=51).status_code == 422
    storage = setup.env.client.app.state.storage  # type: ignore[attr-defined]
    storage.delete(words_key(setup.tenant.tenant_id, document_id))
    gone = words_of(setup, document_id)
    assert (gone.status_code, gone.json()["code"]) == (404, "words_not_kept")


def test_the_console_shows_the_words_the_engine_kept(setup: Setup) -> None:  # noqa: F811
    batch = submit(setup, [("three.pdf", PDF, three_pages())])
    wait_terminal(setup, batch["id"])
    document_id = batch["documents"][0]["id"]
    storage = setup.env.client.app.state.storage  # type: ignore[attr-defined]
    key = words_key(setup.tenant.tenant_id, document_id)
    kept = words.loaded(storage.read_bytes(key, max_bytes=10**7))
    page = kept.pages[0]
    marked = replace(page, words=(replace(page.words[0], text="KEPT"), *page.words[1:]))
    storage.write_bytes(key, words.dumped(replace(kept, pages=(marked,)), ocr_engine="tesseract"))
    with setup.env.session_factory.begin() as session:
        email = f"reviewer-{setup.tenant.tenant_id}@example.com"
        user = tenants_service.invite_user(
            session, setup.tenant.tenant_id, email=email, role="reviewer"
        )
        passwords.set_password(
            session, setup.tenant.tenant_id, user_id=user.user_id, password=PASSWORD
        )
    app = setup.env.client.app
    with TestClient(app, base_url="https://testserver", follow_redirects=False) as browser:
        assert sign_in(browser, email).status_code == 303
        shown = ok(browser.get(f"/console/documents/{document_id}/words"), 200)
    # The console read the kept words, not the file again.
    assert [w["text"] for w in shown["pages"][0]][:2] == ["KEPT", "No:"]
    assert len(shown["pages"]) == 1


@pytest.mark.tesseract
def test_the_words_of_a_scan_carry_the_ocr_engine_and_its_confidences(setup: Setup) -> None:  # noqa: F811
    batch = submit(setup, [("scan.png", "image/png", scanned_invoice("INV-55", "55.00"))])
    wait_terminal(setup, batch["id"])
    (page,) = ok(words_of(setup, batch["documents"][0]["id"]), 200)["pages"]
    assert (page["page"], page["width"], page["height"], page["engine"]) == (
        1,
        1240,
        1754,
        "tesseract",
    )
    texts = [w["text"] for w in page["words"]]
    assert "INV-55" in texts and "55.00" in texts
    for word in page["words"]:
        x0, y0, x1, y1 = word["box"]
        assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
        assert 0 <= word["confidence"] <= 1
    assert any(w["confidence"] < 1 for w in page["words"])
    number = page["words"][texts.index("INV-55")]
    assert number["box"][1] < 320 / 1754 < number["box"][3]  # drawn 300 px down, 40 px high
