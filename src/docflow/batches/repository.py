"""Queries for batches, including the two lookups that must cross tenants by design."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, text
from sqlalchemy.orm import Session

from docflow.batches.models import Batch, BatchStatus
from docflow.db import is_postgres
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.tenancy import TenantId, TenantRepository, cross_tenant, found_across_tenants

# Served by ix_batches_status_created / ix_batches_created, read backwards.
NEWEST_FIRST = (SortKey(Batch.created_at, descending=True), SortKey(Batch.id, descending=True))


@dataclass(frozen=True, slots=True)
class BatchFilter:
    """What a batch listing keeps (None: no condition); `since` / `until` bound the creation
    time (since inclusive, until exclusive)."""

    status: str | None = None
    project_id: str | None = None
    workflow_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


class BatchRepository(TenantRepository):
    def get(self, batch_id: str, *, fresh: bool = False) -> Batch | None:
        """The batch; `fresh` re-reads a batch already loaded in the session (after an atomic
        update such as `increment`, which does not touch loaded objects)."""
        stmt = self.base(Batch).where(Batch.id == batch_id)
        if fresh:
            stmt = stmt.execution_options(populate_existing=True)
        return self.session.scalars(stmt).first()

    def lock(self, batch_id: str) -> Batch | None:
        """The batch, read afresh and locked until the transaction ends (`FOR UPDATE` on
        PostgreSQL; on SQLite a write transaction holds the whole database already). Landing an
        upload and beginning or expiring the batch take this lock first, so they serialise."""
        stmt = (
            self.base(Batch)
            .where(Batch.id == batch_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def page(
        self, match: BatchFilter | None = None, *, cursor: str | None, limit: int | None
    ) -> Page[Batch]:
        """The tenant's batches matching `match`, newest first: ix_batches_created, or by
        status / project / workflow ix_batches_status_created / _project_created /
        _workflow_created, each ending in (created_at, id) so the bounds and the order are
        served by the index too."""
        match = match or BatchFilter()
        stmt = self.base(Batch)
        for column, value in (
            (Batch.status, match.status),
            (Batch.project_id, match.project_id),
            (Batch.workflow_id, match.workflow_id),
        ):
            if value is not None:
                stmt = stmt.where(column == value)
        if match.since is not None:
            stmt = stmt.where(Batch.created_at >= match.since)
        if match.until is not None:
            stmt = stmt.where(Batch.created_at < match.until)
        return keyset_page(self.session, stmt, order=NEWEST_FIRST, cursor=cursor, limit=limit)

    def in_project(self, project_id: str) -> list[Batch]:
        """Every batch of a project (ix_batches_project_created)."""
        stmt = (
            self.base(Batch)
            .where(Batch.project_id == project_id)
            .order_by(Batch.created_at, Batch.id)
        )
        return list(self.session.scalars(stmt))

    def created_before(
        self, project_id: str, *, before: datetime, statuses: Iterable[str], limit: int
    ) -> list[Batch]:
        """The project's oldest `limit` batches in `statuses` created before `before`
        (ix_batches_project_created, oldest first)."""
        stmt = (
            self.base(Batch)
            .where(
                Batch.project_id == project_id,
                Batch.created_at < before,
                Batch.status.in_(list(statuses)),
            )
            .order_by(Batch.created_at, Batch.id)
            .limit(limit)
        )
        return list(self.session.scalars(stmt))

    def compare_and_set(self, batch_id: str, *, expected_version: int, **values: Any) -> bool:
        """Apply `values` only if the batch is still at `expected_version` (then bump it).

        True when this call won; False when someone changed the batch first (re-read and decide
        again). Loaded objects are not refreshed: re-read after a successful set if needed.
        """
        stmt = (
            self.scoped_update(Batch)
            .where(Batch.id == batch_id, Batch.version == expected_version)
            .values(version=expected_version + 1, **values)
            .execution_options(synchronize_session=False)
        )
        result = self.session.execute(stmt)
        return bool(getattr(result, "rowcount", 0) == 1)

    def increment(self, batch_id: str, column: Any, *, now: datetime) -> Batch | None:
        """Add one to a counter `column` (e.g. `Batch.failed_count`) atomically, bumping the
        version: concurrent document completions never lose a count. Returns the batch as the
        update left it (None when absent): of two concurrent increments, the second waits for
        the first's commit and sees its count."""
        stmt = (
            self.scoped_update(Batch)
            .where(Batch.id == batch_id)
            .values({column: column + 1, Batch.version: Batch.version + 1, Batch.updated_at: now})
            .returning(Batch)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def move_count(self, batch_id: str, source: Any, target: Any, *, now: datetime) -> Batch | None:
        """Move one from counter `source` to counter `target` atomically, bumping the version;
        the batch as the update left it (None when absent). See `increment`."""
        stmt = (
            self.scoped_update(Batch)
            .where(Batch.id == batch_id)
            .values(
                {
                    source: source - 1,
                    target: target + 1,
                    Batch.version: Batch.version + 1,
                    Batch.updated_at: now,
                }
            )
            .returning(Batch)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def take_document(
        self, batch_id: str, counter: Any, *, uploaded: bool, now: datetime
    ) -> Batch | None:
        """Take one deleted document out of the counters atomically: `document_count`, the
        counter of its status `counter`, and `uploaded_count` when `uploaded`; bumping the
        version. The batch as the update left it (None when absent). See `increment`."""
        values = {
            Batch.document_count: Batch.document_count - 1,
            counter: counter - 1,
            Batch.version: Batch.version + 1,
            Batch.updated_at: now,
        }
        if uploaded:
            values[Batch.uploaded_count] = Batch.uploaded_count - 1
        stmt = (
            self.scoped_update(Batch)
            .where(Batch.id == batch_id)
            .values(values)
            .returning(Batch)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def set_status(self, batch_id: str, status: str, *, now: datetime) -> Batch | None:
        """Set the status of a batch this transaction already holds (after `move_count`)."""
        stmt = (
            self.scoped_update(Batch)
            .where(Batch.id == batch_id)
            .values(status=status, version=Batch.version + 1, updated_at=now, completed_at=now)
            .returning(Batch)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def set_cancelled(self, batch_id: str, *, cancelled: int, now: datetime) -> Batch | None:
        """Mark a batch this transaction holds (`lock`) CANCELLED, counting `cancelled`
        documents; the batch as the update left it."""
        stmt = (
            self.scoped_update(Batch)
            .where(Batch.id == batch_id)
            .values(
                status=BatchStatus.CANCELLED.value,
                cancelled_count=Batch.cancelled_count + cancelled,
                version=Batch.version + 1,
                updated_at=now,
                completed_at=now,
            )
            .returning(Batch)
            .execution_options(populate_existing=True)
        )
        return self.session.scalars(stmt).first()

    def delete(self, batch_id: str) -> None:
        """Remove the batch's row (its documents would go with it, ON DELETE CASCADE; the
        deletion removes them first, see `batches.lifecycle`)."""
        stmt = self.scoped_delete(Batch).where(Batch.id == batch_id)
        self.session.execute(stmt.execution_options(synchronize_session=False))


@cross_tenant("the pipeline knows only a batch id; it then reads everything under the tenant")
def find_batch_tenant(session: Session, batch_id: str) -> TenantId | None:
    """The tenant owning `batch_id`, or None (SECURITY DEFINER on PostgreSQL)."""
    if is_postgres(session):
        stmt = text("SELECT docflow_batch_tenant(:batch_id)")
        value = session.execute(stmt, {"batch_id": batch_id}).scalar_one_or_none()
    else:
        value = session.execute(
            select(Batch.tenant_id).where(Batch.id == batch_id)
        ).scalar_one_or_none()
    return found_across_tenants(str(value)) if value is not None else None


@cross_tenant("the scheduler finds waiting batches of every tenant whose time has come")
def find_due_batches(session: Session, now: datetime, limit: int) -> list[tuple[TenantId, str]]:
    """(tenant id, batch id) of CREATED batches whose scheduled time or upload deadline is past."""
    if is_postgres(session):
        rows = session.execute(
            text("SELECT tenant_id, batch_id FROM docflow_due_batches(:now, :limit)"),
            {"now": now, "limit": limit},
        )
        return [(found_across_tenants(r.tenant_id), r.batch_id) for r in rows]
    stmt = (
        select(Batch.tenant_id, Batch.id)
        .where(
            Batch.status == BatchStatus.CREATED.value,
            or_(Batch.scheduled_for <= now, Batch.upload_deadline <= now),
        )
        .order_by(Batch.id)
        .limit(limit)
    )
    return [(found_across_tenants(r.tenant_id), r.id) for r in session.execute(stmt)]
