"""Queries of the search projection, on either engine.

One interface, two full-text implementations chosen by the session's dialect:

- SQLite: FTS5 rows in `search_fts` sharing the entry's rowid. The virtual table has no
  row-level security, so every statement that reads it joins it to the tenant's entries
  (`base()`) and filters its own `tenant_id` column too.
- PostgreSQL: the GIN index on the stored, generated `body_vector` column
  (`to_tsvector('simple', body)`, migration 0022), matched against that column so no vector is
  computed at query time; nothing to write besides the entry itself, and row-level security
  applies to the table.

Search terms arrive as plain words (`search.query`): every term must match; FTS5 syntax or
tsquery operators in a tenant's words are never interpreted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, column, func, literal_column, select, table, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from docflow.db import is_postgres
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, Document
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.search.models import FTS_TABLE, TS_CONFIG, VECTOR_COLUMN, SearchEntry
from docflow.tenancy import TenantRepository, cross_tenant

MARK = ("<mark>", "</mark>")
_SNIPPET_WORDS = 16
_FTS = table(FTS_TABLE, column("rowid"), column("body"), column("tenant_id"), column("document_id"))
_ROWID: ColumnElement[Any] = literal_column("search_entries.rowid")
_ORDER = [SortKey(SearchEntry.document_id, descending=True)]


@dataclass(frozen=True, slots=True)
class EntryValues:
    """What an entry holds besides its key."""

    project_id: str | None
    batch_id: str
    workflow_id: str | None
    name: str
    status: str
    confidence: float | None
    version: int
    fields: dict[str, Any]
    numbers: dict[str, float]
    dates: dict[str, str]
    body: str


@dataclass(frozen=True, slots=True)
class FieldCondition:
    """`field <op> value` on one field: a number compares with the values that read as numbers,
    a date (ISO `YYYY-MM-DD`) with those that read as dates, text (`eq` only) with the value."""

    name: str
    op: str  # "eq", "gt", "gte", "lt", "lte"
    value: float | str
    kind: str  # "number", "date" or "text"


@dataclass(frozen=True, slots=True)
class Filters:
    """A search's conditions: words of the text (all must match), project, status, fields."""

    terms: list[str]
    project_id: str | None = None
    status: str | None = None
    fields: Sequence[FieldCondition] = ()


def _condition(c: FieldCondition) -> ColumnElement[bool]:
    if c.kind == "number":
        left: ColumnElement[Any] = SearchEntry.numbers[c.name].as_float()
    elif c.kind == "date":
        left = SearchEntry.dates[c.name].as_string()
    else:
        left = SearchEntry.fields[c.name].as_string()
    compare = {
        "eq": left.__eq__,
        "gt": left.__gt__,
        "gte": left.__ge__,
        "lt": left.__lt__,
        "lte": left.__le__,
    }[c.op]
    result: ColumnElement[bool] = compare(c.value)
    return result


class SearchRepository(TenantRepository):
    @property
    def _postgres(self) -> bool:
        return self.session.get_bind().dialect.name == "postgresql"

    def get(self, document_id: str) -> SearchEntry | None:
        stmt = self.base(SearchEntry).where(SearchEntry.document_id == document_id)
        return self.session.scalars(stmt).first()

    def put(self, document_id: str, values: EntryValues, *, replace_equal: bool = False) -> bool:
        """Write the entry when it is missing or older than `values.version` (or as old, with
        `replace_equal`: a rebuild); whether it was written. Its `updated_at` is the clock the
        documents' own use (microseconds on both engines: the projection lag is measured
        against `documents.updated_at`)."""
        row = {k: getattr(values, k) for k in EntryValues.__slots__}
        older = (
            SearchEntry.version <= values.version
            if replace_equal
            else SearchEntry.version < values.version
        )
        updated = self.session.execute(
            self.scoped_update(SearchEntry)
            .where(SearchEntry.document_id == document_id, older)
            .values(**row, updated_at=utcnow())
        )
        if updated.rowcount == 0:  # type: ignore[attr-defined]
            if self.get(document_id) is not None:
                return False  # as new or newer already
            try:
                with self.session.begin_nested():
                    self.session.execute(
                        self.scoped_insert(SearchEntry).values(
                            document_id=document_id, **row, updated_at=utcnow()
                        )
                    )
            except IntegrityError:  # written meanwhile by another delivery: compare again
                return self.put(document_id, values, replace_equal=replace_equal)
        self._index(document_id, values.body)
        return True

    def _own_rowids(self, document_ids: list[str]) -> Select[Any]:
        return (
            self.base(SearchEntry)
            .where(SearchEntry.document_id.in_(document_ids))
            .with_only_columns(_ROWID)
        )

    def _index(self, document_id: str, body: str) -> None:
        if self._postgres:
            return
        rowid = self._own_rowids([document_id]).scalar_subquery()
        self.session.execute(_FTS.delete().where(_FTS.c.rowid == rowid))
        self.session.execute(
            _FTS.insert().values(
                rowid=rowid, body=body, tenant_id=self.tenant_id, document_id=document_id
            )
        )

    def delete(self, document_ids: list[str]) -> int:
        """Remove these documents' entries (and their full-text rows); how many went."""
        if not document_ids:
            return 0
        if not self._postgres:
            self.session.execute(
                _FTS.delete().where(_FTS.c.rowid.in_(self._own_rowids(document_ids)))
            )
        result = self.session.execute(
            self.scoped_delete(SearchEntry).where(SearchEntry.document_id.in_(document_ids))
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def in_batch(self, batch_id: str) -> list[str]:
        """The document ids of a batch's entries."""
        stmt = self.base(SearchEntry).where(SearchEntry.batch_id == batch_id)
        return list(self.session.scalars(stmt.with_only_columns(SearchEntry.document_id)))

    def versions_of(self, document_ids: Sequence[str]) -> dict[str, int]:
        """The version each of these documents' entries holds (absent: no entry), by document
        id (the primary key)."""
        if not document_ids:
            return {}
        stmt = self.base(SearchEntry).with_only_columns(
            SearchEntry.document_id, SearchEntry.version
        )
        rows = self.session.execute(stmt.where(SearchEntry.document_id.in_(document_ids)))
        return {str(r[0]): int(r[1]) for r in rows}

    def versions_after(self, after: str | None, limit: int) -> list[tuple[str, int]]:
        """(document id, version) of up to `limit` entries in id order after `after`."""
        stmt = self.base(SearchEntry).with_only_columns(
            SearchEntry.document_id, SearchEntry.version
        )
        if after is not None:
            stmt = stmt.where(SearchEntry.document_id > after)
        rows = self.session.execute(stmt.order_by(SearchEntry.document_id).limit(limit))
        return [(str(r[0]), int(r[1])) for r in rows]

    def search(self, filters: Filters, *, cursor: str | None, limit: int) -> Page[SearchEntry]:
        """A page of the tenant's entries matching `filters`, newest document first."""
        stmt = self.base(SearchEntry)
        if filters.project_id is not None:
            stmt = stmt.where(SearchEntry.project_id == filters.project_id)
        if filters.status is not None:
            stmt = stmt.where(SearchEntry.status == filters.status)
        stmt = stmt.where(*[_condition(c) for c in filters.fields])
        if filters.terms:
            stmt = self._matching(stmt, filters.terms)
        return keyset_page(self.session, stmt, order=_ORDER, cursor=cursor, limit=limit)

    def _matching(self, stmt: Select[SearchEntry], terms: list[str]) -> Select[SearchEntry]:
        if self._postgres:
            vector: ColumnElement[Any] = literal_column(
                f"{SearchEntry.__tablename__}.{VECTOR_COLUMN}"
            )
            return stmt.where(vector.op("@@")(_tsquery(terms)))
        return stmt.join(_FTS, _FTS.c.rowid == _ROWID).where(
            _FTS.c.body.op("MATCH")(_fts_expression(terms)), _FTS.c.tenant_id == self.tenant_id
        )

    def snippets(self, document_ids: list[str], terms: list[str]) -> dict[str, str]:
        """A passage of each entry with the terms marked (`MARK`), by document id."""
        if not document_ids or not terms:
            return {}
        mine = self.base(SearchEntry).where(SearchEntry.document_id.in_(document_ids))
        stmt: Select[Any]
        if self._postgres:
            options = (
                f"StartSel={MARK[0]}, StopSel={MARK[1]}, MaxWords={_SNIPPET_WORDS}, "
                'MinWords=4, MaxFragments=2, FragmentDelimiter=" … "'
            )
            headline = func.ts_headline(_config(), SearchEntry.body, _tsquery(terms), options)
            stmt = mine.with_only_columns(SearchEntry.document_id, headline)
        else:
            snippet = func.snippet(
                literal_column(FTS_TABLE), 0, MARK[0], MARK[1], "…", _SNIPPET_WORDS
            )
            stmt = self._matching(mine, terms).with_only_columns(SearchEntry.document_id, snippet)
        return {str(r[0]): str(r[1]) for r in self.session.execute(stmt)}


@cross_tenant("the readiness check counts every tenant's lagging entries: a count only")
def lagging_entries(session: Session, *, before: datetime, limit: int) -> int:
    """Of every tenant's `limit` latest terminal documents changed before `before`
    (ix_documents_changed), how many have no search entry or an older one than the document."""
    if is_postgres(session):
        found = session.execute(
            text("SELECT * FROM docflow_search_lagging(:before, :limit)"),
            {"before": before, "limit": limit},
        ).scalar_one()
        return int(found)
    latest = (
        select(Document.tenant_id, Document.id, Document.version)
        .where(
            Document.updated_at < before,
            Document.status.in_([s.value for s in TERMINAL_DOCUMENT_STATUSES]),
        )
        .order_by(Document.updated_at.desc())
        .limit(limit)
        .subquery()
    )
    stmt = (
        select(func.count())
        .select_from(latest)
        .outerjoin(
            SearchEntry,
            (SearchEntry.tenant_id == latest.c.tenant_id)
            & (SearchEntry.document_id == latest.c.id),
        )
        .where(SearchEntry.version.is_(None) | (SearchEntry.version < latest.c.version))
    )
    return int(session.execute(stmt).scalar_one())


def _config() -> ColumnElement[Any]:
    return literal_column(f"'{TS_CONFIG}'::regconfig")


def _tsquery(terms: list[str]) -> ColumnElement[Any]:
    return func.plainto_tsquery(_config(), " ".join(terms))


def _fts_expression(terms: list[str]) -> str:
    # Each term a quoted string: the words are never read as FTS5 syntax.
    return " ".join('"{}"'.format(t.replace('"', '""')) for t in terms)
