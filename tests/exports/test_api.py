"""`GET /v1/batches/{id}/export` over HTTP: one row per document with a column per field of
the batch's workflow version, line items in their own section (CSV) or per document (JSON
Lines) or sheet (XLSX), another tenant's batch a 404, a bad format a 422."""

from __future__ import annotations

import csv
import io
import json
import secrets
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from openpyxl import load_workbook
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches import service as batches
from docflow.batches.service import DocumentSpec
from docflow.kit.clock import utcnow
from docflow.projects import service as projects
from docflow.tenancy import TenantContext
from docflow.workflows import service as workflows
from search.helpers import finish
from support.api_fixtures import ApiTenant
from support.db_fixtures import sample_definition

LABEL = [{"kind": "label", "labels": ["X"]}]


def _result(total: str, rows: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "status": "SUCCEEDED",
        "confidence": 0.9,
        "fields": {"total": {"value": total}, "vendor": {"value": "Acme, Inc."}},
        "line_items": {"items": {"name": "items", "rows": rows}},
    }


def _batch(factory: sessionmaker[Session], tenant: ApiTenant) -> str:
    context = TenantContext(tenant_id=tenant.tenant_id, scopes=("*",))
    definition = sample_definition(
        fields=[
            {"name": "total", "type": "money", "locators": LABEL},
            {"name": "vendor", "locators": LABEL},
            {
                "name": "items",
                "type": "line_items",
                "columns": [
                    {"name": "description", "labels": ["Description"]},
                    {"name": "amount", "type": "money", "labels": ["Amount"]},
                ],
            },
        ]
    )
    with factory() as session, session.begin():
        project = projects.create_project(session, context, name=f"x {secrets.token_hex(3)}")
        workflow = workflows.create_workflow(
            session, context, project_id=project.id, definition=definition
        )
        batch = batches.create_batch(
            session,
            context,
            project_id=project.id,
            workflow_id=workflow.id,
            documents=[DocumentSpec(f"{i}.pdf", "application/pdf", 10) for i in range(3)],
            scheduled_for=None,
            upload_deadline=utcnow() + timedelta(hours=1),
            max_documents=10,
            max_document_bytes=10_000,
        )
        docs = sorted(batch.documents, key=lambda d: d.name)
        finish(
            session,
            context,
            docs[0],
            "SUCCEEDED",
            _result("10.00", [{"description": "bolt", "amount": "4.00"}]),
        )
        finish(session, context, docs[1], "SUCCEEDED", _result("20.00", []))
        return batch.id


def test_a_batch_exports_as_csv_with_a_line_item_section(
    client: TestClient, session_factory: sessionmaker[Session], tenant_key_a: ApiTenant
) -> None:
    batch_id = _batch(session_factory, tenant_key_a)
    answer = client.get(f"/v1/batches/{batch_id}/export", headers=tenant_key_a.headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert rows[0] == [
        "document_id",
        "name",
        "status",
        "confidence",
        "error_code",
        "total",
        "vendor",
    ]
    documents = rows[1:4]
    assert sorted((r[1], r[2], r[5], r[6]) for r in documents) == [
        ("0.pdf", "SUCCEEDED", "10.00", "Acme, Inc."),
        ("1.pdf", "SUCCEEDED", "20.00", "Acme, Inc."),
        ("2.pdf", "PENDING_UPLOAD", "", ""),
    ]
    first = next(r[0] for r in documents if r[1] == "0.pdf")
    assert rows[4:] == [
        [],
        ["[items]"],
        ["document_id", "row", "description", "amount"],
        [first, "1", "bolt", "4.00"],
    ]


def test_a_batch_exports_as_json_lines(
    client: TestClient, session_factory: sessionmaker[Session], tenant_key_a: ApiTenant
) -> None:
    batch_id = _batch(session_factory, tenant_key_a)
    answer = client.get(f"/v1/batches/{batch_id}/export?format=jsonl", headers=tenant_key_a.headers)
    assert answer.status_code == 200, answer.text
    lines = [json.loads(line) for line in answer.text.splitlines()]
    by_name = {line["name"]: line for line in lines}
    assert by_name["0.pdf"]["fields"] == {"total": "10.00", "vendor": "Acme, Inc."}
    assert by_name["0.pdf"]["line_items"] == {"items": [{"description": "bolt", "amount": "4.00"}]}
    assert by_name["2.pdf"]["fields"] == {"total": None, "vendor": None}


def test_a_batch_exports_as_a_workbook_with_a_line_item_sheet(
    client: TestClient, session_factory: sessionmaker[Session], tenant_key_a: ApiTenant
) -> None:
    batch_id = _batch(session_factory, tenant_key_a)
    answer = client.get(f"/v1/batches/{batch_id}/export?format=xlsx", headers=tenant_key_a.headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    )
    assert answer.headers["content-disposition"].endswith(f'{batch_id}.xlsx"')
    book = load_workbook(io.BytesIO(answer.content))
    assert book.sheetnames == ["documents", "items"]
    documents = list(book["documents"].iter_rows(values_only=True))
    assert documents[0] == (
        "document_id",
        "name",
        "status",
        "confidence",
        "error_code",
        "total",
        "vendor",
    )
    assert sorted((r[1], r[2], r[3], r[5], r[6]) for r in documents[1:]) == [
        ("0.pdf", "SUCCEEDED", 0.9, 10, "Acme, Inc."),
        ("1.pdf", "SUCCEEDED", 0.9, 20, "Acme, Inc."),
        ("2.pdf", "PENDING_UPLOAD", None, None, None),
    ]
    # Amounts are numbers (money: two decimals shown), text stays text.
    total, vendor = book["documents"]["F2"], book["documents"]["G2"]
    assert (total.data_type, total.number_format, vendor.data_type) == ("n", "#,##0.00", "s")
    first = next(r[0] for r in documents if r[1] == "0.pdf")
    assert list(book["items"].iter_rows(values_only=True)) == [
        ("document_id", "row", "description", "amount"),
        (first, 1, "bolt", 4),
    ]
    assert book["items"]["D2"].data_type == "n"


def test_an_export_of_another_tenants_batch_or_in_a_bad_format_is_refused(
    client: TestClient,
    session_factory: sessionmaker[Session],
    tenant_key_a: ApiTenant,
    tenant_key_b: ApiTenant,
) -> None:
    batch_id = _batch(session_factory, tenant_key_a)
    assert (
        client.get(f"/v1/batches/{batch_id}/export", headers=tenant_key_b.headers).status_code
        == 404
    )
    bad = client.get(f"/v1/batches/{batch_id}/export?format=xml", headers=tenant_key_a.headers)
    assert bad.status_code == 422 and "format" in bad.text


def test_a_csv_export_escapes_cells_a_spreadsheet_would_run_as_formulas(
    client: TestClient, session_factory: sessionmaker[Session], tenant_key_a: ApiTenant
) -> None:
    context = TenantContext(tenant_id=tenant_key_a.tenant_id, scopes=("*",))
    batch_id = _batch(session_factory, tenant_key_a)
    with session_factory() as session, session.begin():
        (doc,) = [
            d
            for d in batches.get_batch(session, context, batch_id=batch_id).documents
            if d.name == "2.pdf"
        ]
        doc.name = "=cmd|' /C calc'!A0.pdf"
        rows = [{"description": "@SUM(A1:A9)", "amount": "-4.00"}]
        finish(session, context, doc, "SUCCEEDED", _result("-12.50", rows))
    answer = client.get(f"/v1/batches/{batch_id}/export", headers=tenant_key_a.headers)
    assert answer.status_code == 200, answer.text
    assert "\"'=cmd|' /C calc'!A0.pdf\"" in answer.text
    assert '"\'@SUM(A1:A9)"' in answer.text
    rows_read = list(csv.reader(io.StringIO(answer.text)))
    (hostile,) = [r for r in rows_read if r[1:2] == ["'=cmd|' /C calc'!A0.pdf"]]
    assert hostile[5] == "-12.50"  # an amount, not a formula: left as it is
    assert [hostile[0], "1", "'@SUM(A1:A9)", "-4.00"] in rows_read
