"""`GET /v1/search`: full-text and field search over the tenant's documents (`read` scope)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from docflow.documents.models import DocumentStatus
from docflow.exports import service as exports
from docflow.exports.service import MEDIA_TYPES, ExportFormat
from docflow.http.deps import IdQuery, PageDep, SessionDep, TenantDep, TenantReadsDep, require_scope
from docflow.http.query import Prefixed
from docflow.search import service
from docflow.search.query import FIELD_PREFIX, MAX_QUERY, read_query
from docflow.search.schemas import SearchHit, SearchList

router = APIRouter(tags=["search"], dependencies=[Depends(require_scope())])

FieldParameters = Annotated[dict[str, str], Depends(Prefixed(FIELD_PREFIX))]


@router.get("/search", response_model=SearchList)
def search_documents(
    session: SessionDep,
    tenant: TenantDep,
    page: PageDep,
    fields: FieldParameters,
    q: Annotated[
        str | None,
        Query(max_length=MAX_QUERY, description="words that must all appear (any order)"),
    ] = None,
    project_id: IdQuery = None,
    status_filter: Annotated[
        DocumentStatus | None, Query(alias="status", description="only documents in this status")
    ] = None,
) -> SearchList:
    """Search documents by words (`q`) and field values (`field.<name>.<op>=`), newest first."""
    # The words must all appear, in the extracted values, field names, names and text.
    # `field.<name>.<op>=<value>` (`op`: eq, the default with `field.<name>=`, gt, gte, lt,
    # lte) compares a field's value as a number, an ISO date (YYYY-MM-DD) or, for eq, as text:
    # `field.total.gte=100`, `field.date.lte=2026-01-31`. A field no workflow of the tenant (of
    # `project_id`) has is a 422 naming the parameter. The index is a projection of the
    # documents' events: it follows them within moments (docs/api.md, "Search").
    query = read_query(
        q=q,
        project_id=project_id,
        status=status_filter.value if status_filter else None,
        fields=fields,
    )
    found = service.search(session, tenant, query=query, cursor=page.cursor, limit=page.limit)
    return SearchList(
        items=[_hit(hit) for hit in found.items],
        next_cursor=found.next_cursor,
    )


def _hit(hit: service.Hit) -> SearchHit:
    return SearchHit(
        document_id=hit.document_id,
        project_id=hit.project_id,
        batch_id=hit.batch_id,
        workflow_id=hit.workflow_id,
        name=hit.name,
        status=hit.status,
        confidence=hit.confidence,
        version=hit.version,
        fields=hit.fields,
        highlight=hit.highlight,
        link=f"/v1/documents/{hit.document_id}",
    )


@router.get(
    "/search/export",
    response_class=StreamingResponse,
    responses={200: {"content": {m: {} for m in MEDIA_TYPES.values()}}},
)
def export_search(
    session: SessionDep,
    tenant: TenantDep,
    reads: TenantReadsDep,
    fields: FieldParameters,
    q: Annotated[str | None, Query(max_length=MAX_QUERY, description="as for the search")] = None,
    project_id: IdQuery = None,
    status_filter: Annotated[
        DocumentStatus | None, Query(alias="status", description="only documents in this status")
    ] = None,
    export_format: Annotated[
        ExportFormat, Query(alias="format", description="csv, jsonl or xlsx")
    ] = ExportFormat.CSV,
) -> StreamingResponse:
    """All matches of a search (as `GET /v1/search`) as one streamed CSV, JSONL or XLSX file."""
    # A row per document and a column per field of the tenant's workflows (of `project_id`),
    # as the index holds them; no line items (the index keeps their words only).
    query = read_query(
        q=q,
        project_id=project_id,
        status=status_filter.value if status_filter else None,
        fields=fields,
    )
    plan = exports.plan_search_export(session, tenant, query=query)
    details = exports.search_details(reads, tenant, query)
    return StreamingResponse(
        exports.export_bytes(export_format, plan, details),
        media_type=MEDIA_TYPES[export_format],
        headers={"content-disposition": f'attachment; filename="search.{export_format.value}"'},
    )
