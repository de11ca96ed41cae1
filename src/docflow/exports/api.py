"""`GET /v1/batches/{batch_id}/export`: a batch's results as one streamed file (`read`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from docflow.exports import service
from docflow.exports.service import MEDIA_TYPES, ExportFormat
from docflow.http.deps import (
    SessionDep,
    SettingsDep,
    StorageDep,
    TenantDep,
    TenantReadsDep,
    require_scope,
)

router = APIRouter(tags=["exports"], dependencies=[Depends(require_scope())])


@router.get(
    "/batches/{batch_id}/export",
    response_class=StreamingResponse,
    responses={200: {"content": {m: {} for m in MEDIA_TYPES.values()}}},
)
def export_batch(
    batch_id: str,
    session: SessionDep,
    tenant: TenantDep,
    reads: TenantReadsDep,
    storage: StorageDep,
    settings: SettingsDep,
    export_format: Annotated[
        ExportFormat, Query(alias="format", description="csv, jsonl or xlsx")
    ] = ExportFormat.CSV,
) -> StreamingResponse:
    """A batch's results as one streamed CSV, JSON Lines or XLSX file, one row per document."""
    # Its id, name, status, confidence and error code, then a column per scalar field of the
    # batch's workflow version (its normalised value). CSV puts each line-item table in a
    # section after the documents, XLSX on a sheet of its own; JSON Lines gives each document's
    # `fields` and `line_items`.
    # Streamed a page of documents at a time.
    plan = service.plan_batch_export(session, tenant, batch_id=batch_id)
    details = service.batch_details(
        reads, storage, tenant, plan, max_result_bytes=settings.max_document_bytes
    )
    filename = f"{batch_id}.{export_format.value}"
    return StreamingResponse(
        service.export_bytes(export_format, plan, details),
        media_type=MEDIA_TYPES[export_format],
        headers={"content-disposition": f'attachment; filename="{filename}"'},
    )
