"""Every query of the outbox and the dead letters."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from docflow.db import is_postgres
from docflow.events.models import DeadLetter, OutboxEvent
from docflow.tenancy import TenantId, TenantRepository, cross_tenant, found_across_tenants
from docflow.tenants.models import Tenant


class OutboxRepository(TenantRepository):
    def insert(self, event: OutboxEvent) -> None:
        """Write `event` with one INSERT, at once (it is never changed in its transaction, so
        the unit of work would only add cost on the pipeline's hot path)."""
        if event.tenant_id != self.tenant_id:
            raise ValueError("event of another tenant")
        self.session.execute(
            self.scoped_insert(OutboxEvent).values(
                id=event.id,
                type=event.type,
                source=event.source,
                subject=event.subject,
                data=event.data,
                occurred_at=event.occurred_at,
                published_at=event.published_at,
                traceparent=event.traceparent,
            )
        )

    def get(self, event_id: str) -> OutboxEvent | None:
        stmt = self.base(OutboxEvent).where(OutboxEvent.id == event_id)
        return self.session.scalars(stmt).first()

    def hold(self, event_id: str) -> OutboxEvent | None:
        """The event, share-locked on PostgreSQL until the transaction ends: a deletion of it
        (`delete_about`) waits for the holder, or the holder finds it gone."""
        stmt = self.base(OutboxEvent).where(OutboxEvent.id == event_id)
        return self.session.scalars(stmt.with_for_update(read=True)).first()

    def ids_about(self, subjects: Sequence[str]) -> list[str]:
        """The ids of the tenant's events about these subjects (ix_outbox_events_subject)."""
        if not subjects:
            return []
        stmt = (
            self.base(OutboxEvent)
            .with_only_columns(OutboxEvent.id)
            .where(OutboxEvent.subject.in_(subjects))
        )
        return [str(event_id) for event_id in self.session.scalars(stmt)]

    def delete_about(self, subjects: Sequence[str]) -> int:
        """Delete the tenant's events about these subjects, published or not; how many
        (ix_outbox_events_subject)."""
        if not subjects:
            return 0
        stmt = (
            self.scoped_delete(OutboxEvent)
            .where(OutboxEvent.subject.in_(subjects))
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0))

    def mark_published(self, event_id: str, now: datetime) -> bool:
        """Record the publication once: True if this call set it."""
        stmt = (
            self.scoped_update(OutboxEvent)
            .where(OutboxEvent.id == event_id, OutboxEvent.published_at.is_(None))
            .values(published_at=now)
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(self.session.execute(stmt), "rowcount", 0) == 1)

    def published_since(self, since: datetime, limit: int) -> list[OutboxEvent]:
        """The tenant's published events from `since` on, oldest first."""
        stmt = (
            self.base(OutboxEvent)
            .where(OutboxEvent.occurred_at >= since, OutboxEvent.published_at.is_not(None))
            .order_by(OutboxEvent.occurred_at, OutboxEvent.id)
            .limit(limit)
        )
        return list(self.session.scalars(stmt))

    def sweep(self, before: datetime) -> int:
        """Delete the tenant's published events older than `before`; how many went."""
        stmt = (
            self.scoped_delete(OutboxEvent)
            .where(OutboxEvent.published_at.is_not(None), OutboxEvent.occurred_at < before)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0))


class DeadLetterRepository(TenantRepository):
    def add(self, letter: DeadLetter) -> None:
        self.session.add(letter)
        self.session.flush()

    def get(self, letter_id: str) -> DeadLetter | None:
        stmt = self.base(DeadLetter).where(DeadLetter.id == letter_id)
        return self.session.scalars(stmt).first()

    def open_for(self, consumer: str, target: str, event_id: str) -> DeadLetter | None:
        """The letter of `consumer` for `target` and the event that is not redriven yet."""
        stmt = self.base(DeadLetter).where(
            DeadLetter.consumer == consumer,
            DeadLetter.target == target,
            DeadLetter.event_id == event_id,
            DeadLetter.redriven_at.is_(None),
        )
        return self.session.scalars(stmt.order_by(DeadLetter.created_at.desc())).first()

    def select(
        self,
        *,
        consumer: str | None,
        target: str | None = None,
        category: str | None,
        since: datetime | None,
        until: datetime | None,
        open_only: bool = False,
        limit: int,
    ) -> list[DeadLetter]:
        """The tenant's dead letters matching every given filter (`open_only`: not redriven
        yet), newest first."""
        stmt = self.base(DeadLetter)
        if consumer is not None:
            stmt = stmt.where(DeadLetter.consumer == consumer)
        if target is not None:
            stmt = stmt.where(DeadLetter.target == target)
        if open_only:
            stmt = stmt.where(DeadLetter.redriven_at.is_(None))
        if category is not None:
            stmt = stmt.where(DeadLetter.category == category)
        if since is not None:
            stmt = stmt.where(DeadLetter.created_at >= since)
        if until is not None:
            stmt = stmt.where(DeadLetter.created_at < until)
        stmt = stmt.order_by(DeadLetter.created_at.desc(), DeadLetter.id.desc()).limit(limit)
        return list(self.session.scalars(stmt))

    def mark_redriven(
        self, letter_id: str, *, now: datetime, actor: str, reason: str, workflow_id: str
    ) -> bool:
        """Record the redrive once: True if this call did (False: redriven already)."""
        stmt = (
            self.scoped_update(DeadLetter)
            .where(DeadLetter.id == letter_id, DeadLetter.redriven_at.is_(None))
            .values(
                redriven_at=now,
                redriven_by=actor,
                redrive_reason=reason,
                redrive_workflow_id=workflow_id,
            )
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(self.session.execute(stmt), "rowcount", 0) == 1)

    def delete_for_events(self, event_ids: Sequence[str]) -> int:
        """Delete the tenant's dead letters of these events, redriven or not; how many
        (ix_event_dead_letters_event)."""
        if not event_ids:
            return 0
        stmt = (
            self.scoped_delete(DeadLetter)
            .where(DeadLetter.event_id.in_(event_ids))
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0))

    def sweep(self, before: datetime) -> int:
        stmt = self.scoped_delete(DeadLetter).where(DeadLetter.created_at < before)
        stmt = stmt.execution_options(synchronize_session=False)
        return int(getattr(self.session.execute(stmt), "rowcount", 0))


@cross_tenant("the publisher serves every tenant; it then reads each event under its tenant")
def find_unpublished(session: Session, limit: int) -> list[tuple[str, str]]:
    """(tenant id, event id) of unpublished events, oldest first (SECURITY DEFINER on
    PostgreSQL)."""
    if is_postgres(session):
        rows = session.execute(
            text("SELECT tenant_id, event_id FROM docflow_outbox_unpublished(:limit)"),
            {"limit": limit},
        )
        return [(r.tenant_id, r.event_id) for r in rows]
    stmt = (
        select(OutboxEvent.tenant_id, OutboxEvent.id)
        .where(OutboxEvent.published_at.is_(None))
        .order_by(OutboxEvent.occurred_at, OutboxEvent.id)
        .limit(limit)
    )
    return [(r.tenant_id, r.id) for r in session.execute(stmt)]


@cross_tenant("the retention sweeps visit every tenant: ids only")
def all_tenant_ids(session: Session) -> list[TenantId]:
    """Every tenant's id (SECURITY DEFINER on PostgreSQL, where a tenant sees its own row)."""
    if is_postgres(session):
        ids = session.scalars(text("SELECT * FROM docflow_tenant_ids()"))
    else:
        ids = session.scalars(select(Tenant.id).order_by(Tenant.id))
    return [found_across_tenants(tenant_id) for tenant_id in ids]


@cross_tenant("readiness reports totals over every tenant: two numbers, no rows")
def event_signals(session: Session) -> tuple[int, datetime | None]:
    """(dead letters not redriven, time of the oldest unpublished event) over all tenants."""
    if is_postgres(session):
        row = session.execute(
            text("SELECT dead_letters, oldest_unpublished FROM docflow_event_signals()")
        ).one()
        return int(row.dead_letters), row.oldest_unpublished
    dead = session.execute(
        select(func.count()).select_from(DeadLetter).where(DeadLetter.redriven_at.is_(None))
    ).scalar_one()
    oldest = session.execute(
        select(func.min(OutboxEvent.occurred_at)).where(OutboxEvent.published_at.is_(None))
    ).scalar_one()
    return int(dead), _as_utc(oldest)


def _as_utc(value: datetime | str | None) -> datetime | None:
    # An aggregate over a UTCDateTime column comes back untyped on SQLite.
    from datetime import UTC

    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
