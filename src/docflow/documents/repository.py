"""Queries for documents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Text, and_, cast, func, or_, select, text, union_all
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from docflow.db import is_postgres
from docflow.documents.models import (
    INDEXED_DOCUMENT_STATUSES,
    INDEXED_STATUS_PREDICATE,
    TERMINAL_DOCUMENT_STATUSES,
    UNFINISHED_DOCUMENT_STATUSES,
    AnnouncedState,
    Document,
    DocumentStatus,
    DownstreamRecord,
)
from docflow.events.envelopes import DOCUMENT_DOWNSTREAM_CHANGED
from docflow.events.models import OutboxEvent
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.search.models import SearchEntry
from docflow.tenancy import TenantId, TenantRepository, cross_tenant, found_across_tenants
from docflow.webhooks.models import DeliveryStatus, WebhookDelivery

BY_ID = (SortKey(Document.id),)
OLDEST_CHANGE_FIRST = (SortKey(Document.updated_at), SortKey(Document.id))
# Ids are time-ordered: newest first is the id read backwards, on whichever index serves the
# filter (the primary key, ix_documents_project / _workflow / _batch; by status
# ix_documents_tenant_status, whose few rows PostgreSQL sorts).
NEWEST_FIRST = (SortKey(Document.id, descending=True),)


@dataclass(frozen=True, slots=True)
class DocumentFilter:
    """What a tenant-wide document query keeps (None: no condition). `after` / `before` bound
    the id (see `docflow.kit.ids.floor_for`); `weak_field` keeps documents whose result names
    that field among the reasons for their status."""

    status: str | None = None
    project_id: str | None = None
    workflow_id: str | None = None
    batch_id: str | None = None
    after: str | None = None
    before: str | None = None
    weak_field: str | None = None


class DocumentRepository(TenantRepository):
    def get(self, document_id: str, *, fresh: bool = False) -> Document | None:
        """The document; `fresh` re-reads one already loaded in the session (after a
        compare-and-set, which does not touch loaded objects)."""
        stmt = self.base(Document).where(Document.id == document_id)
        if fresh:
            stmt = stmt.execution_options(populate_existing=True)
        return self.session.scalars(stmt).first()

    def lock(self, document_id: str) -> Document | None:
        """The document, read afresh and locked until the transaction ends (`FOR UPDATE` on
        PostgreSQL; on SQLite a write transaction holds the whole database already)."""
        stmt = (
            self.base(Document)
            .where(Document.id == document_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def page_matching(
        self, match: DocumentFilter, *, cursor: str | None, limit: int | None
    ) -> Page[Document]:
        """The tenant's documents matching `match`, newest first."""
        stmt = self.base(Document)
        for column, value in (
            (Document.project_id, match.project_id),
            (Document.workflow_id, match.workflow_id),
            (Document.batch_id, match.batch_id),
            (Document.status, match.status),
        ):
            if value is not None:
                stmt = stmt.where(column == value)
        if match.status in INDEXED_DOCUMENT_STATUSES:
            stmt = stmt.where(text(INDEXED_STATUS_PREDICATE))
        if match.after is not None:
            stmt = stmt.where(Document.id >= match.after)
        if match.before is not None:
            stmt = stmt.where(Document.id < match.before)
        if match.weak_field is not None:
            # The reasons are strings "<field>: why" (JSON text): one begins with the name
            # followed by a colon. Field names are [a-z0-9_]; "_" is escaped for LIKE.
            escaped = match.weak_field.replace("_", "\\_")
            reasons = cast(Document.result["reasons"], Text)
            stmt = stmt.where(reasons.like(f'%"{escaped}: %', escape="\\"))
        return keyset_page(self.session, stmt, order=NEWEST_FIRST, cursor=cursor, limit=limit)

    def page_in_batch(
        self, batch_id: str, *, status: str | None, cursor: str | None, limit: int | None
    ) -> Page[Document]:
        """A batch's documents in id order: ix_documents_batch, or ix_documents_batch_status
        for the indexed statuses."""
        stmt = self.base(Document).where(Document.batch_id == batch_id)
        if status is not None:
            stmt = stmt.where(Document.status == status)
            if status in INDEXED_DOCUMENT_STATUSES:
                stmt = stmt.where(text(INDEXED_STATUS_PREDICATE))
        return keyset_page(self.session, stmt, order=BY_ID, cursor=cursor, limit=limit)

    def page_by_status(
        self, status: str, *, cursor: str | None, limit: int | None
    ) -> Page[Document]:
        """The tenant's documents in an indexed status, oldest change first
        (ix_documents_tenant_status)."""
        stmt = (
            self.base(Document)
            .where(Document.status == status)
            .where(text(INDEXED_STATUS_PREDICATE))
        )
        return keyset_page(
            self.session, stmt, order=OLDEST_CHANGE_FIRST, cursor=cursor, limit=limit
        )

    def status_counts(self, batch_id: str) -> dict[str, int]:
        """How many of the batch's documents are in each status (ix_documents_batch)."""
        stmt = (
            self.base(Document)
            .where(Document.batch_id == batch_id)
            .with_only_columns(Document.status, func.count())
            .group_by(Document.status)
        )
        return {status: int(count) for status, count in self.session.execute(stmt).all()}

    def in_batch(self, batch_id: str) -> list[Document]:
        stmt = self.base(Document).where(Document.batch_id == batch_id).order_by(Document.id)
        return list(self.session.scalars(stmt))

    def in_batch_with_ids(self, batch_id: str, document_ids: Sequence[str]) -> list[Document]:
        """The batch's documents among `document_ids` (the primary key; ix_documents_batch)."""
        if not document_ids:
            return []
        stmt = self.base(Document).where(
            Document.batch_id == batch_id, Document.id.in_(list(document_ids))
        )
        return list(self.session.scalars(stmt))

    def in_batch_with_sources(self, batch_id: str, source_ids: Sequence[str]) -> list[Document]:
        """The batch's documents re-running any of the uploads `source_ids`
        (ix_documents_batch_source)."""
        if not source_ids:
            return []
        stmt = self.base(Document).where(
            Document.batch_id == batch_id, Document.source_document_id.in_(list(source_ids))
        )
        return list(self.session.scalars(stmt))

    def page_not_rerun(
        self,
        batch_id: str,
        *,
        rerun_batch_id: str,
        keyed_by_source: bool,
        cursor: str | None,
        limit: int | None,
    ) -> Page[Document]:
        """The batch's documents in id order whose upload no document of `rerun_batch_id` (a
        re-run) runs: the upload is the document's `source_document_id` when
        `keyed_by_source` (the batch is a re-run too), else its id (ix_documents_batch; the
        re-run's side by ix_documents_batch_source)."""
        run = aliased(Document)
        upload = Document.source_document_id if keyed_by_source else Document.id
        runs = (
            self.base(run)
            .where(run.batch_id == rerun_batch_id, run.source_document_id == upload)
            .exists()
        )
        stmt = self.base(Document).where(Document.batch_id == batch_id, ~runs)
        return keyset_page(self.session, stmt, order=BY_ID, cursor=cursor, limit=limit)

    def mark_uploaded(
        self,
        document_id: str,
        *,
        storage_key: str,
        size: int,
        sha256: str,
        detected_type: str | None,
        now: datetime,
    ) -> Document | None:
        """Record the document's file if it is still PENDING_UPLOAD, bumping its version, in
        one statement; the document as it now is, or None when it was not waiting (or absent)."""
        stmt = (
            self.scoped_update(Document)
            .where(
                Document.id == document_id,
                Document.status == DocumentStatus.PENDING_UPLOAD.value,
            )
            .values(
                status=DocumentStatus.UPLOADED.value,
                storage_key=storage_key,
                size=size,
                sha256=sha256,
                detected_type=detected_type,
                uploaded_at=now,
                updated_at=now,
                version=Document.version + 1,
            )
            .returning(Document)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def compare_and_set(self, document_id: str, *, expected_version: int, **values: Any) -> bool:
        """Apply `values` only if the document is still at `expected_version` (then bump it).

        True when this call won; False when someone changed the document first.
        """
        stmt = (
            self.scoped_update(Document)
            .where(Document.id == document_id, Document.version == expected_version)
            .values(version=expected_version + 1, **values)
            .execution_options(synchronize_session=False)
        )
        result = self.session.execute(stmt)
        return bool(getattr(result, "rowcount", 0) == 1)

    def cancel_unfinished(self, batch_id: str, *, code: str, reason: str, now: datetime) -> int:
        """End the batch's documents not yet terminal CANCELLED (bumping their versions); how
        many. A document another transaction holds right now (its outcome being recorded, or
        its processing beginning) is skipped rather than waited for (`SKIP LOCKED` on
        PostgreSQL): waiting could deadlock with the outcome's count on the batch this
        transaction holds; the document flow's steps end such a document themselves when they
        find its batch cancelled."""
        unfinished = [s.value for s in UNFINISHED_DOCUMENT_STATUSES]
        held = self.session.scalars(
            self.base(Document)
            .where(Document.batch_id == batch_id, Document.status.in_(unfinished))
            .with_only_columns(Document.id)
            .with_for_update(skip_locked=True)
        ).all()
        if not held:
            return 0
        stmt = (
            self.scoped_update(Document)
            .where(Document.id.in_(held), Document.status.in_(unfinished))
            .values(
                status=DocumentStatus.CANCELLED.value,
                error_code=code,
                error_reason=reason,
                completed_at=now,
                updated_at=now,
                version=Document.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0))

    def referenced_outside(self, batch_id: str, source_ids: Sequence[str]) -> set[str]:
        """Which of the uploads `source_ids` a document of another batch still runs: the
        upload itself (`uploads_elsewhere`) or a re-run of it (`reruns_elsewhere`)."""
        if not source_ids:
            return set()
        return self.uploads_elsewhere(batch_id, source_ids) | self.reruns_elsewhere(
            batch_id, source_ids
        )

    def uploads_elsewhere(self, batch_id: str, document_ids: Sequence[str]) -> set[str]:
        """Those of `document_ids` outside the batch (the primary key)."""
        return self._outside(Document.id, batch_id, document_ids)

    def reruns_elsewhere(self, batch_id: str, source_ids: Sequence[str]) -> set[str]:
        """Those of the uploads `source_ids` a re-run outside the batch runs
        (ix_documents_source)."""
        return self._outside(Document.source_document_id, batch_id, source_ids)

    def _outside(self, column: Any, batch_id: str, values: Sequence[str]) -> set[str]:
        # The batch is compared here, not in SQL: `batch_id <> ?` leads SQLite, without
        # statistics, to scan the tenant's documents in ix_documents_batch instead of looking
        # the few values up.
        stmt = self.base(Document).where(column.in_(values))
        rows = self.session.execute(
            stmt.with_only_columns(column, Document.batch_id, Document.storage_key)
        ).all()
        return {str(value) for value, batch, _ in rows if batch != batch_id}

    def ids_in_batch(self, batch_id: str) -> list[str]:
        """The ids of the batch's documents (ix_documents_batch, no row read)."""
        stmt = self.base(Document).with_only_columns(Document.id)
        return [str(i) for i in self.session.scalars(stmt.where(Document.batch_id == batch_id))]

    def delete_in_batch(self, batch_id: str, only: Sequence[str] | None = None) -> int:
        """Remove the batch's documents (`only` those of them, when given; by their foreign
        keys their review claims and reviews go too); how many (ix_documents_batch, or the
        primary key)."""
        stmt = self.scoped_delete(Document).where(Document.batch_id == batch_id)
        if only is not None:
            stmt = stmt.where(Document.id.in_(list(only)))
        result = self.session.execute(stmt.execution_options(synchronize_session=False))
        return int(getattr(result, "rowcount", 0))


class DownstreamRepository(TenantRepository):
    """The downstream state recorded for each of the tenant's completed documents."""

    def get(self, document_id: str) -> DownstreamRecord | None:
        """The recorded state, read afresh (another transaction may have changed it)."""
        stmt = (
            self.base(DownstreamRecord)
            .where(DownstreamRecord.document_id == document_id)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def insert_first(
        self, document_id: str, *, state: str, lagging: list[str], version: int, now: datetime
    ) -> bool:
        """Record the document's first state unless one is recorded already (a concurrent
        check's): True when this call recorded it. A conflict is answered False without an
        error, so the caller's transaction stays usable."""
        dialect = postgresql if is_postgres(self.session) else sqlite
        stmt = (
            dialect.insert(DownstreamRecord)
            .values(
                tenant_id=self.tenant_id,
                document_id=document_id,
                state=state,
                lagging=lagging,
                version=version,
                changed_at=now,
            )
            .on_conflict_do_nothing(index_elements=["tenant_id", "document_id"])
            .returning(DownstreamRecord.document_id)
        )
        return self.session.execute(stmt).first() is not None

    def compare_and_set(
        self,
        document_id: str,
        *,
        expected: str,
        state: str,
        lagging: list[str],
        version: int,
        now: datetime,
    ) -> bool:
        """Move the recorded state from `expected` to `state` (`UPDATE ... WHERE state =
        :expected`): True when this call moved it, False when another check moved it first
        (on PostgreSQL the second update waits for the first's commit and then matches no
        row; on SQLite write transactions are serialised)."""
        stmt = (
            self.scoped_update(DownstreamRecord)
            .where(DownstreamRecord.document_id == document_id, DownstreamRecord.state == expected)
            .values(state=state, lagging=lagging, version=version, changed_at=now)
            .execution_options(synchronize_session=False)
        )
        result = self.session.execute(stmt)
        return bool(getattr(result, "rowcount", 0) == 1)


@cross_tenant("the downstream pass visits every tenant's lagging documents: ids only")
def downstream_due(
    session: Session, *, changed_from: datetime, changed_before: datetime, limit: int
) -> list[tuple[TenantId, str]]:
    """(tenant id, document id) of the documents whose downstream state may have turned
    DEGRADED by lag: terminal documents changed in [`changed_from`, `changed_before`) whose
    search entry is missing or older and whose recorded state is not DEGRADED
    (ix_documents_changed), and the documents of webhook deliveries created in that window
    and still PENDING (ix_webhook_deliveries_pending); at most `limit` of each, oldest first
    (SECURITY DEFINER on PostgreSQL)."""
    if is_postgres(session):
        rows = session.execute(
            text(
                "SELECT tenant_id, document_id FROM "
                "docflow_downstream_due(:changed_from, :changed_before, :limit)"
            ),
            {"changed_from": changed_from, "changed_before": changed_before, "limit": limit},
        ).all()
    else:
        lagging = (
            select(Document.tenant_id, Document.id)
            .outerjoin(
                SearchEntry,
                and_(
                    SearchEntry.tenant_id == Document.tenant_id,
                    SearchEntry.document_id == Document.id,
                ),
            )
            .outerjoin(
                DownstreamRecord,
                and_(
                    DownstreamRecord.tenant_id == Document.tenant_id,
                    DownstreamRecord.document_id == Document.id,
                ),
            )
            .where(
                Document.updated_at >= changed_from,
                Document.updated_at < changed_before,
                Document.status.in_([s.value for s in TERMINAL_DOCUMENT_STATUSES]),
                or_(SearchEntry.version.is_(None), SearchEntry.version < Document.version),
                or_(
                    DownstreamRecord.state.is_(None),
                    DownstreamRecord.state != AnnouncedState.DEGRADED.value,
                ),
            )
            .order_by(Document.updated_at)
            .limit(limit)
            .subquery()
        )
        pending = (
            select(WebhookDelivery.tenant_id, func.substr(OutboxEvent.subject, 11))
            .join(
                OutboxEvent,
                and_(
                    OutboxEvent.tenant_id == WebhookDelivery.tenant_id,
                    OutboxEvent.id == WebhookDelivery.event_id,
                ),
            )
            .where(
                # Literal, so SQLite sees the partial index's own condition.
                text(f"webhook_deliveries.status = '{DeliveryStatus.PENDING}'"),
                WebhookDelivery.created_at >= changed_from,
                WebhookDelivery.created_at < changed_before,
                OutboxEvent.subject.like("documents/%"),
                OutboxEvent.type != DOCUMENT_DOWNSTREAM_CHANGED,
            )
            .order_by(WebhookDelivery.created_at)
            .limit(limit)
            .subquery()
        )
        both = union_all(select(*lagging.c), select(*pending.c))
        rows = list(session.execute(both).all())
    found = dict.fromkeys((str(r[0]), str(r[1])) for r in rows)
    return [(found_across_tenants(t), d) for t, d in found]
