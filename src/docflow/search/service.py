"""Use cases of the search projection: build a document's entry from canonical state (the
consumer's and the operator commands' one path), remove entries, and search.

An entry is built only from the document as read now under its tenant, never from an event:
its `version` is the document's, and `SearchRepository.put` writes it only over an older
entry, so a stale or repeated event re-reads the document and changes nothing. A document
that is gone (its batch or project deleted) loses its entry; one not yet terminal has none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy.orm import Session

from docflow.documents import service as documents
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, Document
from docflow.errors import NotFound
from docflow.extraction.result import MAX_TEXT
from docflow.kit.pagination import Page
from docflow.search.query import SearchQuery
from docflow.search.repository import EntryValues, Filters, SearchRepository
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext, TenantId
from docflow.workflows import service as workflows

_NUMBER = re.compile(r"^-?[0-9]{1,18}(\.[0-9]{1,12})?$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_WORD = re.compile(r"\w+")
MAX_BODY = MAX_TEXT + 20_000


class Projected(StrEnum):
    """What projecting a document did to its entry."""

    WRITTEN = "written"
    UNCHANGED = "unchanged"  # the entry had this version (or a newer one) already
    REMOVED = "removed"  # the document is gone
    SKIPPED = "skipped"  # the document is not terminal yet


@dataclass(frozen=True, slots=True)
class Hit:
    """One match: the entry and a passage with the query's words marked (None without `q`)."""

    document_id: str
    project_id: str | None
    batch_id: str
    workflow_id: str | None
    name: str
    status: str
    confidence: float | None
    version: int
    fields: dict[str, Any]
    highlight: str | None


def _words(text: str) -> str:
    """`text` as words only, the way a query is read (`search.query`): both engines then split
    it the same way (PostgreSQL's parser would read "QX-481" as "qx" and "-481")."""
    return "\n".join(" ".join(_WORD.findall(line)) for line in text.splitlines())


def entry_values(document: Document, result: dict[str, Any] | None) -> EntryValues:
    """The entry of `document` with its extraction `result` (None: it has none)."""
    result = result or {}
    raw_fields = result.get("fields") or {}
    fields = {n: f.get("value") for n, f in raw_fields.items() if isinstance(f, dict)}
    numbers = {n: float(v) for n, v in fields.items() if isinstance(v, str) and _NUMBER.match(v)}
    dates = {n: v for n, v in fields.items() if isinstance(v, str) and _DATE.match(v)}
    lines = [document.name]
    lines += [f"{n} {v if v is not None else ''}".strip() for n, v in fields.items()]
    for name, table in (result.get("line_items") or {}).items():
        lines.append(name)
        for row in table.get("rows") or [] if isinstance(table, dict) else []:
            lines.append(" ".join(str(c) for c in row.values() if c is not None))
    lines.append(str(result.get("text") or ""))
    return EntryValues(
        project_id=document.project_id,
        batch_id=document.batch_id,
        workflow_id=document.workflow_id,
        name=document.name,
        status=document.status,
        confidence=document.confidence,
        version=document.version,
        fields=fields,
        numbers=numbers,
        dates=dates,
        body=_words("\n".join(lines)[:MAX_BODY]),
    )


def project_document(
    session: Session,
    storage: Storage,
    *,
    tenant_id: TenantId,
    document_id: str,
    max_result_bytes: int,
    rebuild: bool = False,
) -> Projected:
    """Bring the document's entry up to the document as it is now, in the caller's
    transaction. With `rebuild` an entry of the same version is written again too."""
    tenant = TenantContext(tenant_id=tenant_id)
    repo = SearchRepository(session, tenant_id)
    try:
        document = documents.get_fresh(session, tenant, document_id=document_id)
    except NotFound:
        return Projected.REMOVED if repo.delete([document_id]) else Projected.UNCHANGED
    if document.status not in TERMINAL_DOCUMENT_STATUSES:
        return Projected.SKIPPED
    result = documents.document_result(storage, document, max_bytes=max_result_bytes)
    written = repo.put(document_id, entry_values(document, result), replace_equal=rebuild)
    return Projected.WRITTEN if written else Projected.UNCHANGED


def remove_batch(session: Session, *, tenant_id: str, batch_id: str) -> int:
    """Remove the entries of a batch's documents (the batch is being deleted), in the caller's
    transaction; how many."""
    repo = SearchRepository(session, tenant_id)
    return repo.delete(repo.in_batch(batch_id))


def remove_documents(session: Session, *, tenant_id: str, document_ids: Sequence[str]) -> int:
    """Remove the entries of these documents (they are being deleted), in the caller's
    transaction; how many."""
    return SearchRepository(session, tenant_id).delete(list(document_ids))


def search(
    session: Session, tenant: TenantContext, *, query: SearchQuery, cursor: str | None, limit: int
) -> Page[Hit]:
    """A page of the tenant's matching documents, newest first, each with a highlighted
    passage when the query has words. InvalidInput (naming the parameter) for a field no
    workflow of the tenant (of the project, with `project_id`) has."""
    query.check_fields(workflows.field_names(session, tenant, project_id=query.project_id))
    repo = SearchRepository(session, tenant.tenant_id)
    filters = Filters(
        terms=query.terms,
        project_id=query.project_id,
        status=query.status,
        fields=query.conditions,
    )
    page = repo.search(filters, cursor=cursor, limit=limit)
    marked = repo.snippets([e.document_id for e in page.items], query.terms)
    return page.map(
        lambda e: Hit(
            document_id=e.document_id,
            project_id=e.project_id,
            batch_id=e.batch_id,
            workflow_id=e.workflow_id,
            name=e.name,
            status=e.status,
            confidence=e.confidence,
            version=e.version,
            fields=e.fields,
            highlight=marked.get(e.document_id),
        )
    )
