"""The search projection at service level, on the database under test: what an entry holds
and finds, the version guard against stale and repeated events, tenant scoping, bad queries,
and deletion through the same path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from docflow.batches import lifecycle
from docflow.batches.repository import BatchRepository
from docflow.errors import InvalidInput
from docflow.search import service
from docflow.search.query import read_query
from docflow.search.repository import SearchRepository
from docflow.search.service import Projected
from docflow.storage.local import LocalStorage
from docflow.tenancy import TenantContext
from search.helpers import deliver, finish, processed_batch, result


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "objects")


def _search(session: Session, tenant: TenantContext, q: str | None = None, **params: str):
    fields = {k.replace("__", "."): v for k, v in params.items() if k.startswith("field")}
    query = read_query(
        q=q,
        project_id=params.get("project_id"),
        status=params.get("status"),
        fields=fields,
    )
    return service.search(session, tenant, query=query, cursor=None, limit=50)


def _names(page: object) -> list[str]:
    return sorted(h.name for h in page.items)  # type: ignore[attr-defined]


def test_an_entry_finds_its_document_by_words_fields_and_text(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    docs = processed_batch(
        session,
        tenant_a,
        [
            result("250.00", "2026-01-15", text="Payment due within thirty days"),
            result("80.00", "2026-02-03", vendor="Globex", text="Net 60"),
        ],
        project="search-words",
    )
    assert [deliver(session, storage, tenant_a, d.id) for d in docs] == [Projected.WRITTEN] * 2

    found = _search(session, tenant_a, "THIRTY days")
    assert _names(found) == ["invoice-0.pdf"]
    assert found.items[0].highlight is not None
    assert "<mark>thirty</mark>" in found.items[0].highlight.lower()
    assert found.items[0].fields["total"] == "250.00"
    assert _names(_search(session, tenant_a, "globex")) == ["invoice-1.pdf"]
    assert _names(_search(session, tenant_a, "widget")) == ["invoice-0.pdf", "invoice-1.pdf"]
    assert _names(_search(session, tenant_a, field__total__gte="100")) == ["invoice-0.pdf"]
    assert _names(_search(session, tenant_a, field__total__lt="100")) == ["invoice-1.pdf"]
    assert _names(_search(session, tenant_a, field__date__lte="2026-01-31")) == ["invoice-0.pdf"]
    assert _names(_search(session, tenant_a, field__vendor="Globex")) == ["invoice-1.pdf"]
    both = _search(
        session, tenant_a, "widget", field__total__gte="50", field__date__gt="2026-02-01"
    )
    assert _names(both) == ["invoice-1.pdf"]
    # A date is never compared with a number: `total` holds no date.
    assert _names(_search(session, tenant_a, field__total__lte="2026-12-31")) == []


def test_stale_and_repeated_deliveries_change_nothing(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    (doc,) = processed_batch(
        session, tenant_a, [result("10.00", "2026-01-01")], project="search-stale"
    )
    assert deliver(session, storage, tenant_a, doc.id) == Projected.WRITTEN
    first = SearchRepository(session, tenant_a.tenant_id).get(doc.id)
    assert first is not None
    old = service.entry_values(doc, result("10.00", "2026-01-01"))
    version = finish(session, tenant_a, doc, "SUCCEEDED", result("99.00", "2026-01-01"))
    # The newer event, twice, then the older one again: one write, and it stays.
    assert deliver(session, storage, tenant_a, doc.id) == Projected.WRITTEN
    assert deliver(session, storage, tenant_a, doc.id) == Projected.UNCHANGED
    assert deliver(session, storage, tenant_a, doc.id) == Projected.UNCHANGED
    repo = SearchRepository(session, tenant_a.tenant_id)
    # An older entry arriving late (built from a stale read) is refused by the version guard.
    assert not repo.put(doc.id, dataclasses.replace(old, version=version - 1))
    session.expire_all()
    entry = repo.get(doc.id)
    assert entry is not None
    assert (entry.version, entry.fields["total"]) == (version, "99.00")
    assert _names(_search(session, tenant_a, field__total__gte="50")) == ["invoice-0.pdf"]


def test_out_of_order_deliveries_end_at_the_newest_version(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    (doc,) = processed_batch(
        session, tenant_a, [result("10.00", "2026-01-01")], project="search-order"
    )
    early = service.entry_values(doc, result("10.00", "2026-01-01"))
    version = finish(session, tenant_a, doc, "SUCCEEDED", result("20.00", "2026-01-01"))
    repo = SearchRepository(session, tenant_a.tenant_id)
    # The second event's delivery arrives first; the first event's entry comes last.
    assert deliver(session, storage, tenant_a, doc.id) == Projected.WRITTEN
    assert not repo.put(doc.id, dataclasses.replace(early, version=version - 1))
    session.expire_all()
    entry = repo.get(doc.id)
    assert entry is not None and entry.version == version and entry.fields["total"] == "20.00"


def test_a_search_sees_its_own_tenant_only(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext, storage: LocalStorage
) -> None:
    for tenant in (tenant_a, tenant_b):
        docs = processed_batch(
            session, tenant, [result("1.00", "2026-01-01", text="shared words")], project="s"
        )
        deliver(session, storage, tenant, docs[0].id)
    mine = _search(session, tenant_a, "shared words")
    assert len(mine.items) == 1
    assert SearchRepository(session, tenant_b.tenant_id).get(mine.items[0].document_id) is None


@pytest.mark.parametrize(
    ("q", "fields", "parameter"),
    [
        ("x" * 501, {}, "q"),
        ("!!! ???", {}, "q"),
        (" ".join(["w"] * 21), {}, "q"),
        (None, {"field.total.between": "1"}, "field.total.between"),
        (None, {"field.total.gte": "abc"}, "field.total.gte"),
        (None, {"field.Total": "1"}, "field.Total"),
        (None, {"field.total.gte.x": "1"}, "field.total.gte.x"),
        (None, {"field.total": ""}, "field.total"),
        (None, {"field.colour": "red"}, "field.colour"),
        (None, {"field.total.gte": "1e999"}, "field.total.gte"),
    ],
)
def test_a_malformed_search_names_its_parameter(
    session: Session,
    tenant_a: TenantContext,
    q: str | None,
    fields: dict[str, str],
    parameter: str,
) -> None:
    processed_batch(session, tenant_a, [result("1.00", "2026-01-01")], project="search-bad")
    with pytest.raises(InvalidInput) as raised:
        query = read_query(q=q, project_id=None, status=None, fields=fields)
        service.search(session, tenant_a, query=query, cursor=None, limit=10)
    assert raised.value.field == parameter


def test_search_syntax_in_the_words_is_only_words(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    (doc,) = processed_batch(
        session, tenant_a, [result("1.00", "2026-01-01", text="near the end or not")], project="syn"
    )
    deliver(session, storage, tenant_a, doc.id)
    for q in ['NEAR("near" end', 'near" OR *', "end & !the | (near", "near:end", "NOT near-"]:
        assert _names(_search(session, tenant_a, q)) == ["invoice-0.pdf"]


def test_deleting_a_batch_removes_its_entries(
    session: Session, tenant_a: TenantContext, storage: LocalStorage
) -> None:
    docs = processed_batch(
        session, tenant_a, [result("1.00", "2026-01-01", text="to be deleted")] * 2, project="del"
    )
    for d in docs:
        deliver(session, storage, tenant_a, d.id)
    batches = BatchRepository(session, tenant_a.tenant_id)
    batch = batches.get(docs[0].batch_id)
    assert batch is not None
    assert batches.compare_and_set(batch.id, expected_version=batch.version, status="SUCCEEDED")
    session.expire_all()
    lifecycle.delete_batch(session, tenant_a, batch_id=batch.id)
    assert _search(session, tenant_a, "deleted").items == []
    assert SearchRepository(session, tenant_a.tenant_id).in_batch(batch.id) == []
    # The event of a deleted document, delivered late, finds nothing to write.
    assert deliver(session, storage, tenant_a, docs[0].id) == Projected.UNCHANGED
