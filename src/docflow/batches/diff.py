"""Comparing two runs of the same uploads: what changed, per document and field, between a
batch and another run of the same files (the batch it re-runs, a re-run of it, or another
re-run of the same original).

Documents are matched by the upload they process: a document's key is its
`source_document_id`, or its own id for an uploaded document, so the original and each of its
re-runs share a key. Two batches are related when both run the uploads of one original batch
(their origin: the batch itself when uploaded, the batch of its documents' sources when a
re-run). `against` is "before", the batch asked about is "after".

The items are the documents of the batch asked about, in id order, each with its counterpart
in `against` (None when `against` did not run that upload), then the documents of `against`
whose upload the batch did not run (a re-run skips uploads that never landed), in id order: a
page at a time, the cursor telling which part it continues. The summary covers the whole
comparison and comes with the first page only (no cursor): a batch holds at most
`max_documents_per_batch` documents, so it is one bounded pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from docflow.batches.models import Batch
from docflow.batches.service import get_batch
from docflow.documents.models import Document
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import document_result
from docflow.errors import InvalidInput
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext

K = TypeVar("K")

# Cursors of the second part of a comparison (documents only `against` ran) start with this;
# keyset cursors (base64url) never hold a dot.
AGAINST_PHASE = "a."

# Confidences closer than this are the same (they are stored as floats of rounded sums).
_EPSILON = 1e-9


class BatchesNotRelated(InvalidInput):
    """The two batches do not run the same uploads."""

    code = "batches_not_related"


@dataclass(frozen=True)
class FieldChange:
    """One field (or line-items table) before and after; `changed`: its value differs;
    `confidence`: "improved", "worsened", "unchanged", or None when a side has no value."""

    name: str
    kind: str  # "field" or "line_items"
    value_before: Any
    value_after: Any
    confidence_before: float | None
    confidence_after: float | None
    changed: bool
    confidence: str | None


@dataclass(frozen=True)
class DocumentChange:
    """One upload's run in each batch (a side is None when that batch did not run it)."""

    source_document_id: str
    name: str
    document_id: str | None
    against_document_id: str | None
    status_before: str | None
    status_after: str | None
    error_code_before: str | None
    error_code_after: str | None
    confidence_before: float | None
    confidence_after: float | None
    status_changed: bool
    changed: bool
    fields: list[FieldChange]


@dataclass(frozen=True)
class DiffSummary:
    """Counts over the whole comparison."""

    documents: int  # uploads run by either batch
    matched: int  # run by both
    only_in_batch: int
    only_in_against: int
    documents_changed: int  # status or any field value differs (or run by one side only)
    statuses_changed: int  # matched documents whose status differs
    fields_compared: int
    fields_changed: int
    confidence_improved: int
    confidence_worsened: int


@dataclass(frozen=True)
class BatchDiff:
    batch: Batch
    against: Batch
    summary: DiffSummary | None
    items: list[DocumentChange]
    next_cursor: str | None


def source_key(document: Document) -> str:
    """The upload a document processes: its source, or itself when it was uploaded."""
    return document.source_document_id or document.id


def diff_batches(
    session: Session,
    storage: Storage,
    tenant: TenantContext,
    *,
    batch_id: str,
    against: str,
    cursor: str | None,
    limit: int,
    max_result_bytes: int,
) -> BatchDiff:
    """What changed from `against` to `batch_id`, a page of `batch_id`'s documents at a time
    (see the module docstring). NotFound when either batch is missing or another tenant's;
    InvalidInput (`against`) for the batch itself; BatchesNotRelated when they do not run
    the same uploads."""
    after = get_batch(session, tenant, batch_id=batch_id)
    before = get_batch(session, tenant, batch_id=against)
    if after.id == before.id:
        raise InvalidInput("compare a batch with another run of its files", field="against")
    repo = DocumentRepository(session, tenant.tenant_id)
    origin = _origin(repo, before)
    if origin is None or origin != _origin(repo, after):
        raise BatchesNotRelated(
            f"{after.id} and {before.id} do not run the same uploads: compare a batch with "
            "the batch it re-runs, a re-run of it, or another re-run of the same batch",
            field="against",
        )
    results = _Results(storage, max_result_bytes)
    items, next_cursor = _page(repo, results, after, before, cursor=cursor, limit=limit)
    summary = None
    if cursor is None:
        summary = _summary(results, repo.in_batch(before.id), repo.in_batch(after.id))
    return BatchDiff(
        batch=after, against=before, summary=summary, items=items, next_cursor=next_cursor
    )


def _page(
    repo: DocumentRepository,
    results: _Results,
    after: Batch,
    before: Batch,
    *,
    cursor: str | None,
    limit: int,
) -> tuple[list[DocumentChange], str | None]:
    """One page: `after`'s documents, then those only `before` ran (see the module
    docstring); a page that ends `after`'s part is filled from the other."""
    if cursor is not None and cursor.startswith(AGAINST_PHASE):
        inner = cursor[len(AGAINST_PHASE) :] or None
        return _only_in_against(repo, results, after, before, cursor=inner, limit=limit)
    items, next_cursor = _in_batch(repo, results, after, before, cursor=cursor, limit=limit)
    if next_cursor is not None:
        return items, next_cursor
    if len(items) < limit:
        rest, next_cursor = _only_in_against(
            repo, results, after, before, cursor=None, limit=limit - len(items)
        )
        return items + rest, next_cursor
    more = _only_in_against(repo, results, after, before, cursor=None, limit=1)[0]
    return items, AGAINST_PHASE if more else None


def _in_batch(
    repo: DocumentRepository,
    results: _Results,
    after: Batch,
    before: Batch,
    *,
    cursor: str | None,
    limit: int,
) -> tuple[list[DocumentChange], str | None]:
    """A page of `after`'s documents, each with its counterpart in `before`."""
    page = repo.page_in_batch(after.id, status=None, cursor=cursor, limit=limit)
    keys = [source_key(d) for d in page.items]
    if before.rerun_of is None:  # the original: its documents are the keys themselves
        counterparts = repo.in_batch_with_ids(before.id, keys)
    else:
        counterparts = repo.in_batch_with_sources(before.id, keys)
    by_key = {source_key(d): d for d in counterparts}
    return [results.change(by_key.get(source_key(d)), d) for d in page.items], page.next_cursor


def _only_in_against(
    repo: DocumentRepository,
    results: _Results,
    after: Batch,
    before: Batch,
    *,
    cursor: str | None,
    limit: int,
) -> tuple[list[DocumentChange], str | None]:
    """A page of `before`'s documents whose upload `after` did not run (none when `after` is
    the original: it has every upload)."""
    if after.rerun_of is None:
        return [], None
    page = repo.page_not_rerun(
        before.id,
        rerun_batch_id=after.id,
        keyed_by_source=before.rerun_of is not None,
        cursor=cursor,
        limit=limit,
    )
    items = [results.change(d, None) for d in page.items]
    return items, AGAINST_PHASE + page.next_cursor if page.next_cursor else None


def _origin(repo: DocumentRepository, batch: Batch) -> str | None:
    """The uploaded batch whose files `batch` runs (itself when it is one)."""
    if batch.rerun_of is None:
        return batch.id
    first = repo.page_in_batch(batch.id, status=None, cursor=None, limit=1).items
    if not first or first[0].source_document_id is None:
        return None
    source = repo.get(first[0].source_document_id)
    return source.batch_id if source is not None else None


class _Results:
    """Reads documents' results (inline or from storage) and compares two runs."""

    def __init__(self, storage: Storage, max_bytes: int) -> None:
        self.storage = storage
        self.max_bytes = max_bytes

    def entries(self, document: Document | None) -> dict[tuple[str, str], dict[str, Any]]:
        if document is None:
            return {}
        result = document_result(self.storage, document, max_bytes=self.max_bytes) or {}
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for kind, section, value_key in (
            ("field", "fields", "value"),
            ("line_items", "line_items", "rows"),
        ):
            for name, entry in (result.get(section) or {}).items():
                if isinstance(entry, dict):
                    found[(kind, str(name))] = {
                        "value": entry.get(value_key),
                        "confidence": _number(entry.get("confidence")),
                    }
        return found

    def change(self, before: Document | None, after: Document | None) -> DocumentChange:
        either = after if after is not None else before
        assert either is not None
        old, new = self.entries(before), self.entries(after)
        fields = [
            _field(kind, name, old.get((kind, name)), new.get((kind, name)))
            for kind, name in _union(new, old)
        ]
        status_before = before.status if before is not None else None
        status_after = after.status if after is not None else None
        status_changed = before is not None and after is not None and status_before != status_after
        return DocumentChange(
            source_document_id=source_key(either),
            name=either.name,
            document_id=after.id if after is not None else None,
            against_document_id=before.id if before is not None else None,
            status_before=status_before,
            status_after=status_after,
            error_code_before=before.error_code if before is not None else None,
            error_code_after=after.error_code if after is not None else None,
            confidence_before=before.confidence if before is not None else None,
            confidence_after=after.confidence if after is not None else None,
            status_changed=status_changed,
            changed=status_changed
            or before is None
            or after is None
            or any(f.changed for f in fields),
            fields=fields,
        )


def _union(first: dict[K, Any], second: dict[K, Any]) -> list[K]:
    """The keys of `first` in order, then those only in `second`."""
    return list(first) + [k for k in second if k not in first]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _field(
    kind: str, name: str, before: dict[str, Any] | None, after: dict[str, Any] | None
) -> FieldChange:
    value_before = before["value"] if before else None
    value_after = after["value"] if after else None
    conf_before = before["confidence"] if before else None
    conf_after = after["confidence"] if after else None
    return FieldChange(
        name=name,
        kind=kind,
        value_before=value_before,
        value_after=value_after,
        confidence_before=conf_before,
        confidence_after=conf_after,
        changed=value_before != value_after or (before is None) != (after is None),
        confidence=_trend(conf_before, conf_after),
    )


def _trend(before: float | None, after: float | None) -> str | None:
    if before is None or after is None:
        return None
    if after - before > _EPSILON:
        return "improved"
    if before - after > _EPSILON:
        return "worsened"
    return "unchanged"


def _summary(
    results: _Results, before: Iterable[Document], after: Iterable[Document]
) -> DiffSummary:
    old = {source_key(d): d for d in before}
    new = {source_key(d): d for d in after}
    changes = [results.change(old.get(k), new.get(k)) for k in _union(new, old)]
    fields = [f for c in changes for f in c.fields]
    matched = [c for c in changes if c.document_id and c.against_document_id]
    return DiffSummary(
        documents=len(changes),
        matched=len(matched),
        only_in_batch=sum(1 for c in changes if c.against_document_id is None),
        only_in_against=sum(1 for c in changes if c.document_id is None),
        documents_changed=sum(1 for c in changes if c.changed),
        statuses_changed=sum(1 for c in matched if c.status_changed),
        fields_compared=len(fields),
        fields_changed=sum(1 for f in fields if f.changed),
        confidence_improved=sum(1 for f in fields if f.confidence == "improved"),
        confidence_worsened=sum(1 for f in fields if f.confidence == "worsened"),
    )
