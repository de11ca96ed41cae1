"""Execution history: `/v1/batches/{batch_id}/history`, `/v1/documents/{document_id}/history`."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from docflow.history import service
from docflow.history.schemas import BatchHistory, DocumentHistory
from docflow.http.deps import ClientDep, SessionDep, TenantDep, require_scope

router = APIRouter(tags=["history"], dependencies=[Depends(require_scope())])


@router.get("/batches/{batch_id}/history", response_model=BatchHistory)
def get_batch_history(
    batch_id: str, session: SessionDep, tenant: TenantDep, records: ClientDep
) -> BatchHistory:
    """Every step of the batch's and its documents' executions (null until started)."""
    return service.batch_history(session, records, tenant, batch_id=batch_id)


@router.get("/documents/{document_id}/history", response_model=DocumentHistory)
def get_document_history(
    document_id: str, session: SessionDep, tenant: TenantDep, records: ClientDep
) -> DocumentHistory:
    """Every step of the document's execution (null until processing has started)."""
    return service.document_history(session, records, tenant, document_id=document_id)
