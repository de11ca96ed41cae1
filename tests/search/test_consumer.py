"""The search consumer on the real runtime: a processed document becomes searchable through
its events (published, handed to the `search` consumer, projected under its tenant), by
its extracted values and by the words of its text layer."""

from __future__ import annotations

import time
from typing import Any

from support.api_fixtures import ok
from support.dbos_fixtures import (  # noqa: F401
    Setup,
    dbos_env,
    documents,
    invoice_pdf,
    setup,
    submit,
    wait_terminal,
)

PDF = "application/pdf"


def _search(s: Setup, params: dict[str, str], count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        answer = s.env.client.get("/v1/search", params=params, headers=s.tenant.headers)
        items: list[dict[str, Any]] = ok(answer, 200)["items"]
        if len(items) >= count or time.monotonic() > deadline:
            return items
        time.sleep(0.2)


def test_a_processed_document_becomes_searchable(setup: Setup) -> None:  # noqa: F811
    batch = submit(
        setup,
        [("a.pdf", PDF, invoice_pdf("QX-481", "250.00")), ("b.pdf", PDF, b"%PDF broken")],
    )
    wait_terminal(setup, batch["id"])
    found = _search(setup, {"q": "qx 481"}, 1)
    assert [h["name"] for h in found] == ["a.pdf"]
    assert found[0]["fields"]["invoice_number"] == "QX-481"
    assert "<mark>" in found[0]["highlight"]
    # "Blue Harbour Trading" is no field: it is found in the text the engine read.
    by_text = _search(setup, {"q": "harbour trading", "project_id": setup.project_id}, 1)
    assert [h["name"] for h in by_text] == ["a.pdf"]
    by_total = _search(setup, {"field.total.gte": "200", "project_id": setup.project_id}, 1)
    assert [h["name"] for h in by_total] == ["a.pdf"]
    # A failed document is in the index too, by its name and status.
    failed = _search(setup, {"status": "FAILED", "project_id": setup.project_id}, 1)
    assert [h["name"] for h in failed] == ["b.pdf"]


def test_a_processed_document_turns_ready_downstream_once_its_entry_is_written(
    setup: Setup,  # noqa: F811
) -> None:
    batch = submit(setup, [("c.pdf", PDF, invoice_pdf("QZ-907", "12.00"))])
    wait_terminal(setup, batch["id"])
    deadline = time.monotonic() + 30
    while True:
        (document,) = documents(setup, batch["id"])
        if document["downstream"]["state"] != "PENDING" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    # The consumer projected it: the entry holds the document's version, so nothing lags.
    assert document["downstream"]["state"] == "READY"
    search = document["downstream"]["projections"]["search"]
    assert search["state"] == "READY" and isinstance(search["version"], int)
    assert document["downstream"]["lagging"] == []
    one = ok(
        setup.env.client.get(f"/v1/documents/{document['id']}", headers=setup.tenant.headers), 200
    )
    assert one["downstream"] == document["downstream"]
