"""Processed documents for the search tests, made through the real repositories, and their
projection as the consumer makes it."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from docflow.documents.models import Document
from docflow.documents.repository import DocumentRepository
from docflow.kit.clock import utcnow
from docflow.search.service import Projected, project_document
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext, recorded_by_flow


def result(total: str, date: str, *, text: str = "", vendor: str = "Acme") -> dict[str, Any]:
    def field(name: str, value: str) -> dict[str, Any]:
        return {"name": name, "value": value, "raw": value, "confidence": 0.95, "errors": []}

    return {
        "status": "SUCCEEDED",
        "confidence": 0.95,
        "fields": {
            "invoice_number": field("invoice_number", vendor.upper() + "-1"),
            "total": field("total", total),
            "date": field("date", date),
            "vendor": field("vendor", vendor),
        },
        "line_items": {"items": {"name": "items", "rows": [{"description": "widget"}]}},
        "text": text,
    }


def finish(
    session: Session, tenant: TenantContext, document: Document, status: str, res: dict[str, Any]
) -> int:
    """Move the document to `status` with `res` (a compare-and-set); its new version."""
    repo = DocumentRepository(session, tenant.tenant_id)
    fresh = repo.get(document.id, fresh=True)
    assert fresh is not None
    assert repo.compare_and_set(
        document.id,
        expected_version=fresh.version,
        status=status,
        result=res,
        confidence=res["confidence"],
        completed_at=utcnow(),
        updated_at=utcnow(),
    )
    session.flush()
    return fresh.version + 1


def deliver(
    session: Session, storage: Storage, tenant: TenantContext, document_id: str
) -> Projected:
    """What the search consumer does for an event about the document."""
    return project_document(
        session,
        storage,
        tenant_id=recorded_by_flow(tenant.tenant_id),
        document_id=document_id,
        max_result_bytes=1 << 20,
    )


def search_definition() -> Any:
    from support.db_fixtures import sample_definition

    return sample_definition(
        fields=[
            {"name": "invoice_number", "locators": [{"kind": "label", "labels": ["Invoice No"]}]},
            {
                "name": "total",
                "type": "money",
                "locators": [{"kind": "label", "labels": ["Total"]}],
            },
            {"name": "date", "type": "date", "locators": [{"kind": "label", "labels": ["Date"]}]},
            {"name": "vendor", "locators": [{"kind": "label", "labels": ["Vendor"]}]},
        ]
    )


def processed_batch(
    session: Session, tenant: TenantContext, results: list[dict[str, Any]], *, project: str
) -> list[Document]:
    """A project, a workflow with invoice_number, total, date and vendor, and a batch whose
    documents ended SUCCEEDED with `results` (one each)."""
    from datetime import timedelta

    from docflow.batches import service as batches
    from docflow.batches.service import DocumentSpec
    from docflow.projects import service as projects
    from docflow.workflows import service as workflows

    made = projects.create_project(session, tenant, name=project)
    workflow = workflows.create_workflow(
        session, tenant, project_id=made.id, definition=search_definition()
    )
    batch = batches.create_batch(
        session,
        tenant,
        project_id=made.id,
        workflow_id=workflow.id,
        documents=[
            DocumentSpec(f"invoice-{i}.pdf", "application/pdf", 10) for i in range(len(results))
        ],
        scheduled_for=None,
        upload_deadline=utcnow() + timedelta(hours=1),
        max_documents=1000,
        max_document_bytes=10_000,
    )
    documents = sorted(batch.documents, key=lambda d: d.name)
    for document, res in zip(documents, results, strict=True):
        finish(session, tenant, document, "SUCCEEDED", res)
    return documents
