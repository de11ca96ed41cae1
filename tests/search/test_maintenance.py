"""Rebuild and reconcile on committed data: drifted entries are found and repaired with their
counts, and a rebuild while documents change and new ones are projected loses nothing."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from docflow.db import bind_tenant
from docflow.documents.repository import DocumentFilter, DocumentRepository
from docflow.search import maintenance
from docflow.search.repository import SearchRepository
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext, TenantId, operator
from search.helpers import deliver, finish, processed_batch, result
from support.api_fixtures import make_api_tenant


def _transactions(
    factory: sessionmaker[Session], tenant_id: str, before: Callable[[], None] = lambda: None
) -> Callable[[], AbstractContextManager[Session]]:
    @contextmanager
    def transaction() -> Iterator[Session]:
        before()
        with factory() as session, session.begin():
            bind_tenant(session, tenant_id)
            yield session

    return transaction


def _setup(factory: sessionmaker[Session], count: int) -> tuple[TenantContext, TenantId, list[str]]:
    made = make_api_tenant(factory, f"search {secrets.token_hex(3)}")
    tenant = TenantContext(tenant_id=made.tenant_id, scopes=("*",))
    with factory() as session, session.begin():
        docs = processed_batch(
            session,
            tenant,
            [result(f"{i}.00", "2026-01-01", text=f"doc{i}") for i in range(count)],
            project="maint",
        )
        ids = [d.id for d in docs]
    return tenant, operator(made.tenant_id), ids


def _versions(
    factory: sessionmaker[Session], tenant: TenantContext
) -> tuple[dict[str, int], dict[str, int]]:
    """(entry versions, document versions) of the tenant, by document id."""
    documents: dict[str, int] = {}
    with factory() as session:
        entries = dict(SearchRepository(session, tenant.tenant_id).versions_after(None, 10_000))
        repo = DocumentRepository(session, tenant.tenant_id)
        cursor: str | None = None
        while True:
            page = repo.page_matching(DocumentFilter(), cursor=cursor, limit=200)
            documents.update({d.id: d.version for d in page.items})
            if (cursor := page.next_cursor) is None:
                return entries, documents


def test_reconcile_repairs_missing_stale_and_orphaned_entries(
    session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    storage = LocalStorage(tmp_path)
    tenant, tenant_id, ids = _setup(session_factory, 4)
    with session_factory() as session, session.begin():
        for document_id in ids[:3]:
            deliver(session, storage, tenant, document_id)  # ids[3]: never projected (missing)
        stale = DocumentRepository(session, tenant.tenant_id).get(ids[0])
        assert stale is not None
        finish(session, tenant, stale, "SUCCEEDED", result("7.00", "2026-01-01"))  # stale
    with session_factory() as session, session.begin():
        # An orphan: an entry whose document went without its projection hearing of it.
        document = DocumentRepository(session, tenant.tenant_id).get(ids[1])
        assert document is not None
        session.delete(document)
    transaction = _transactions(session_factory, tenant.tenant_id)
    report = maintenance.reconcile(
        transaction, storage, tenant_id=tenant_id, max_result_bytes=1 << 20
    )
    assert (report.documents, report.missing, report.stale, report.orphaned) == (3, 1, 1, 1)
    assert report.written == 2
    again = maintenance.reconcile(
        transaction, storage, tenant_id=tenant_id, max_result_bytes=1 << 20
    )
    assert (again.missing, again.stale, again.orphaned, again.written) == (0, 0, 0, 0)
    entries, documents = _versions(session_factory, tenant)
    assert entries == documents


def test_a_rebuild_during_writes_loses_nothing(
    session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    storage = LocalStorage(tmp_path)
    tenant, tenant_id, ids = _setup(session_factory, 450)  # three pages of documents
    made: list[str] = []

    def write_meanwhile() -> None:
        """Before each of the rebuild's transactions: a document changes and is projected by
        its consumer, and a new document is processed and projected."""
        with session_factory() as session, session.begin():
            changed = DocumentRepository(session, tenant.tenant_id).get(ids[len(made) % len(ids)])
            assert changed is not None
            finish(session, tenant, changed, "SUCCEEDED", result("5.00", "2026-03-01"))
            deliver(session, storage, tenant, changed.id)
            (new,) = processed_batch(
                session, tenant, [result("1.00", "2026-01-01")], project=f"new{len(made)}"
            )
            deliver(session, storage, tenant, new.id)
            made.append(new.id)

    with session_factory() as session, session.begin():
        for document_id in ids[::2]:
            deliver(session, storage, tenant, document_id)
    transaction = _transactions(session_factory, tenant.tenant_id, write_meanwhile)
    report = maintenance.rebuild(
        transaction, storage, tenant_id=tenant_id, max_result_bytes=1 << 20
    )
    assert report.documents >= 450 and made
    entries, documents = _versions(session_factory, tenant)
    assert set(made) <= set(entries)
    assert entries == documents
