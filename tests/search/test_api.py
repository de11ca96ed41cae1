"""`GET /v1/search` over HTTP: matches with highlights and cursor pages, the tenant's own
documents only, and a 422 naming the parameter for every malformed part."""

from __future__ import annotations

import csv
import io
import secrets
from datetime import datetime
from pathlib import Path

from fastapi.testclient import TestClient
from openpyxl import load_workbook
from sqlalchemy.orm import Session, sessionmaker

from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from search.helpers import deliver, processed_batch, result
from support.api_fixtures import ApiTenant, ok


def _indexed(factory: sessionmaker[Session], tenant: ApiTenant, tmp_path: Path, n: int) -> str:
    context = TenantContext(tenant_id=tenant.tenant_id, scopes=("*",))
    with factory() as session, session.begin():
        docs = processed_batch(
            session,
            context,
            [
                result(f"{100 + i}.00", "2026-01-1" + str(i), text="overdue notice")
                for i in range(n)
            ],
            project=f"api {secrets.token_hex(3)}",
        )
        for d in docs:
            deliver(session, LocalStorage(tmp_path), context, d.id)
        return docs[0].project_id or ""


def test_search_pages_through_matches_with_highlights(
    client: TestClient,
    session_factory: sessionmaker[Session],
    tenant_key_a: ApiTenant,
    tenant_key_b: ApiTenant,
    tmp_path: Path,
) -> None:
    project_id = _indexed(session_factory, tenant_key_a, tmp_path, 4)
    _indexed(session_factory, tenant_key_b, tmp_path, 1)
    params = {"q": "overdue", "project_id": project_id, "limit": "2", "field.total.gte": "101"}
    first = ok(client.get("/v1/search", params=params, headers=tenant_key_a.headers), 200)
    assert len(first["items"]) == 2 and first["next_cursor"]
    hit = first["items"][0]
    assert hit["highlight"].count("<mark>overdue</mark>") == 1
    assert hit["link"] == f"/v1/documents/{hit['document_id']}"
    assert hit["status"] == "SUCCEEDED" and hit["fields"]["total"] == "103.00"
    rest = ok(
        client.get(
            "/v1/search",
            params={**params, "cursor": first["next_cursor"]},
            headers=tenant_key_a.headers,
        ),
        200,
    )
    assert [h["fields"]["total"] for h in rest["items"]] == ["101.00"]
    assert rest["next_cursor"] is None
    everything = ok(client.get("/v1/search?q=overdue", headers=tenant_key_a.headers), 200)
    assert len(everything["items"]) == 4  # tenant B's match is not among them
    dated = ok(
        client.get("/v1/search?field.date.lte=2026-01-10", headers=tenant_key_a.headers), 200
    )
    assert [h["fields"]["date"] for h in dated["items"]] == ["2026-01-10"]


def test_a_malformed_search_is_a_422_naming_the_parameter(
    client: TestClient,
    session_factory: sessionmaker[Session],
    tenant_key_a: ApiTenant,
    tmp_path: Path,
) -> None:
    project_id = _indexed(session_factory, tenant_key_a, tmp_path, 1)
    for query, parameter in [
        ("field.colour=red", "field.colour"),
        ("field.total.gte=abc", "field.total.gte"),
        ("field.total.near=1", "field.total.near"),
        ("field.total=1&field.total=2", "field.total"),
        (f"q={'x' * 501}", "q"),
        ("status=DONE", "status"),
        ("fields.total=1", "fields.total"),
        (f"project_id={project_id}&field.nothing.lt=3", "field.nothing.lt"),
    ]:
        answer = client.get(f"/v1/search?{query}", headers=tenant_key_a.headers)
        assert answer.status_code == 422, (query, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert parameter in answer.text, (query, answer.text)


def test_a_search_exports_every_match_as_csv(
    client: TestClient,
    session_factory: sessionmaker[Session],
    tenant_key_a: ApiTenant,
    tmp_path: Path,
) -> None:
    project_id = _indexed(session_factory, tenant_key_a, tmp_path, 3)
    params = {"q": "overdue", "project_id": project_id, "field.total.gte": "101"}
    answer = client.get("/v1/search/export", params=params, headers=tenant_key_a.headers)
    assert answer.status_code == 200, answer.text
    lines = answer.text.splitlines()
    assert (
        lines[0] == "document_id,name,status,confidence,error_code,date,invoice_number,total,vendor"
    )
    assert sorted(line.split(",")[-2] for line in lines[1:]) == ["101.00", "102.00"]
    bad = client.get("/v1/search/export?field.colour=red", headers=tenant_key_a.headers)
    assert bad.status_code == 422 and "field.colour" in bad.text
    jsonl = client.get(
        "/v1/search/export", params={**params, "format": "jsonl"}, headers=tenant_key_a.headers
    )
    assert len(jsonl.text.splitlines()) == 2
    xlsx = client.get(
        "/v1/search/export", params={**params, "format": "xlsx"}, headers=tenant_key_a.headers
    )
    assert xlsx.status_code == 200, xlsx.text
    assert xlsx.headers["content-disposition"].endswith('search.xlsx"')
    book = load_workbook(io.BytesIO(xlsx.content), read_only=True)
    assert book.sheetnames == ["documents"]
    rows = list(book["documents"].iter_rows(values_only=True))
    assert rows[0][-4:] == ("date", "invoice_number", "total", "vendor")
    # Typed by the workflows' fields: amounts numbers, dates dates, the rest text.
    assert sorted(r[-2] for r in rows[1:]) == [101, 102]
    assert sorted(r[-4] for r in rows[1:]) == [datetime(2026, 1, 11), datetime(2026, 1, 12)]
    assert {type(r[-3]) for r in rows[1:]} == {str}


def test_a_search_csv_export_escapes_cells_a_spreadsheet_would_run_as_formulas(
    client: TestClient,
    session_factory: sessionmaker[Session],
    tenant_key_a: ApiTenant,
    tmp_path: Path,
) -> None:
    context = TenantContext(tenant_id=tenant_key_a.tenant_id, scopes=("*",))
    hostile = '=HYPERLINK("http://evil.example","invoice")'
    with session_factory() as session, session.begin():
        (doc,) = processed_batch(
            session,
            context,
            [result("-12.50", "2026-01-10", text="credit note", vendor=hostile)],
            project=f"api {secrets.token_hex(3)}",
        )
        deliver(session, LocalStorage(tmp_path), context, doc.id)
        project_id = doc.project_id
    params = {"q": "credit", "project_id": project_id}
    answer = client.get("/v1/search/export", params=params, headers=tenant_key_a.headers)
    assert answer.status_code == 200, answer.text
    header, row = csv.reader(io.StringIO(answer.text))
    values = dict(zip(header, row, strict=True))
    assert values["vendor"] == "'" + hostile
    assert values["invoice_number"] == "'" + hostile.upper() + "-1"
    assert values["total"] == "-12.50"
    assert '"\'=HYPERLINK(""http://evil.example"",""invoice"")"' in answer.text
