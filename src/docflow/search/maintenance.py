"""The operator's repairs of the projection: `rebuild` (every entry written again from the
documents) and `reconcile` (only the entries that drifted: missing, stale, orphaned).

Both walk one tenant a page at a time, each page in its own short transaction, so event
consumers keep writing meanwhile. Nothing is dropped first: a rebuild writes each entry over
the old one (same version or older) and searches keep answering throughout; the entry of a
document that changed during the walk is written by its consumer with the newer version,
which the rebuild's older read never overwrites. An entry is removed as orphaned only when
its document is found missing in the transaction that removes it, so a document created
during the walk never loses its entry.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from docflow.documents import service as documents
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES
from docflow.kit.pagination import MAX_LIMIT
from docflow.search.repository import SearchRepository
from docflow.search.service import Projected, project_document
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext, TenantId

Transaction = Callable[[], AbstractContextManager[Session]]


@dataclass
class Report:
    """What a rebuild or reconciliation found and did, in counts."""

    documents: int = 0
    written: int = 0
    missing: int = 0
    stale: int = 0
    orphaned: int = 0
    by_outcome: dict[str, int] = field(default_factory=dict)


def _documents(transaction: Transaction, tenant_id: TenantId) -> dict[str, int]:
    """Version of each of the tenant's terminal documents, by id."""
    found: dict[str, int] = {}
    cursor: str | None = None
    tenant = TenantContext(tenant_id=tenant_id)
    while True:
        with transaction() as session:
            page = documents.query_documents(session, tenant, cursor=cursor, limit=MAX_LIMIT)
            found.update(
                {d.id: d.version for d in page.items if d.status in TERMINAL_DOCUMENT_STATUSES}
            )
        cursor = page.next_cursor
        if cursor is None:
            return found


def _entries(transaction: Transaction, tenant_id: TenantId) -> dict[str, int]:
    """Version of each of the tenant's entries, by document id."""
    found: dict[str, int] = {}
    after: str | None = None
    while True:
        with transaction() as session:
            page = SearchRepository(session, tenant_id).versions_after(after, MAX_LIMIT)
        found.update(page)
        if len(page) < MAX_LIMIT:
            return found
        after = page[-1][0]


def _project(
    transaction: Transaction,
    storage: Storage,
    tenant_id: TenantId,
    document_ids: list[str],
    *,
    max_result_bytes: int,
    rebuild: bool,
    report: Report,
) -> None:
    for start in range(0, len(document_ids), MAX_LIMIT):
        with transaction() as session:
            for document_id in document_ids[start : start + MAX_LIMIT]:
                outcome = project_document(
                    session,
                    storage,
                    tenant_id=tenant_id,
                    document_id=document_id,
                    max_result_bytes=max_result_bytes,
                    rebuild=rebuild,
                )
                report.by_outcome[outcome] = report.by_outcome.get(outcome, 0) + 1
                report.written += outcome == Projected.WRITTEN


def _walk(
    transaction: Transaction,
    storage: Storage,
    tenant_id: TenantId,
    *,
    max_result_bytes: int,
    rebuild: bool,
) -> Report:
    docs = _documents(transaction, tenant_id)
    entries = _entries(transaction, tenant_id)
    report = Report(documents=len(docs))
    report.missing = sum(1 for d in docs if d not in entries)
    report.stale = sum(1 for d, v in docs.items() if d in entries and entries[d] < v)
    orphans = [d for d in entries if d not in docs]
    todo = sorted(docs) if rebuild else sorted(d for d, v in docs.items() if entries.get(d, 0) < v)
    # An orphan's projection removes its entry only if its document is really gone now.
    _project(
        transaction,
        storage,
        tenant_id,
        todo + orphans,
        max_result_bytes=max_result_bytes,
        rebuild=rebuild,
        report=report,
    )
    report.orphaned = report.by_outcome.get(Projected.REMOVED, 0)
    return report


def rebuild(
    transaction: Transaction, storage: Storage, *, tenant_id: TenantId, max_result_bytes: int
) -> Report:
    """Write every entry of the tenant again from its document and remove orphans."""
    return _walk(transaction, storage, tenant_id, max_result_bytes=max_result_bytes, rebuild=True)


def reconcile(
    transaction: Transaction, storage: Storage, *, tenant_id: TenantId, max_result_bytes: int
) -> Report:
    """Write the tenant's missing and stale entries and remove orphaned ones; the counts."""
    return _walk(transaction, storage, tenant_id, max_result_bytes=max_result_bytes, rebuild=False)
