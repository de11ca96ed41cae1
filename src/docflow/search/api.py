"""`GET /v1/search`: full-text and field search over the tenant's documents (`read` scope)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from docflow.documents.models import DocumentStatus
from docflow.http.deps import IdQuery, PageDep, SessionDep, TenantDep, require_scope
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
    """Search the tenant's processed documents: their extracted values, field names, names and
    text. `q` holds words that must all appear; `field.<name>.<op>=<value>` parameters
    (`op`: eq (the default: `field.<name>=`), gt, gte, lt, lte) compare a field's value as a
    number, an ISO date (YYYY-MM-DD) or, for eq, as text: `field.total.gte=100`,
    `field.date.lte=2026-01-31`. A field no workflow of the tenant (of `project_id`) has is a
    422 naming the parameter. Newest document first, cursor-paginated; the index follows the
    documents within moments (it is a projection of their events)."""
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
