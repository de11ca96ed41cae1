"""Queries for sources, their runs and the files they took."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from docflow.db import is_postgres
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.sources.models import Source, SourceFile, SourceRun
from docflow.sources.places import Found, Known
from docflow.tenancy import TenantId, TenantRepository, cross_tenant, found_across_tenants

# Served by ix_source_runs_source (tenant_id, source_id, started_at), read backwards.
RUNS_NEWEST_FIRST = (
    SortKey(SourceRun.started_at, descending=True),
    SortKey(SourceRun.id, descending=True),
)


@dataclass(frozen=True)
class DueSource:
    tenant_id: TenantId
    source_id: str
    due_at: datetime


class SourceRepository(TenantRepository):
    def get(self, source_id: str) -> Source | None:
        return self.session.scalars(self.base(Source).where(Source.id == source_id)).first()

    def add(self, source: Source) -> None:
        self.session.add(source)
        self.session.flush()

    def mark_moved(self, source_id: str, *, path: str, sha256: str, place: str) -> None:
        stmt = (
            self.scoped_update(SourceFile)
            .where(
                SourceFile.source_id == source_id,
                SourceFile.path == path,
                SourceFile.sha256 == sha256,
            )
            .values(moved_to=place)
            .execution_options(synchronize_session=False)
        )
        self.session.execute(stmt)

    def release(self, source_id: str, *, path: str, sha256: str) -> None:
        """Forget that the source took this file, so the next poll may take it again."""
        self.session.execute(
            self.scoped_delete(SourceFile)
            .where(
                SourceFile.source_id == source_id,
                SourceFile.path == path,
                SourceFile.sha256 == sha256,
            )
            .execution_options(synchronize_session=False)
        )

    def paths(self) -> list[str]:
        """The folder paths of every source of the tenant."""
        return [s.path for s in self.session.scalars(self.base(Source))]

    def list_for_project(self, project_id: str) -> list[Source]:
        stmt = self.base(Source).where(Source.project_id == project_id).order_by(Source.id)
        return list(self.session.scalars(stmt))

    def advance(self, source_id: str, *, due_at: datetime, next_at: datetime) -> bool:
        """Move a source's next poll from `due_at` to `next_at`, once: True for the caller
        that moved it (a second tick finds it moved already)."""
        stmt = (
            self.scoped_update(Source)
            .where(Source.id == source_id, Source.next_poll_at == due_at)
            .values(next_poll_at=next_at)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(self.session.execute(stmt), "rowcount", 0)) == 1

    def get_run(self, run_id: str) -> SourceRun | None:
        return self.session.scalars(self.base(SourceRun).where(SourceRun.id == run_id)).first()

    def page_runs(self, source_id: str, *, cursor: str | None, limit: int) -> Page[SourceRun]:
        stmt = self.base(SourceRun).where(SourceRun.source_id == source_id)
        return keyset_page(self.session, stmt, order=RUNS_NEWEST_FIRST, cursor=cursor, limit=limit)

    def known(self, source_id: str) -> Known:
        """The content key of each file of the source taken (and not moved away) by its path,
        size and change time, as last recorded: a poll reuses it for a file unchanged since."""
        stmt = (
            self.base(SourceFile)
            .with_only_columns(
                SourceFile.path, SourceFile.size, SourceFile.mtime_ns, SourceFile.sha256
            )
            .where(
                SourceFile.source_id == source_id,
                SourceFile.moved_to.is_(None),
                SourceFile.mtime_ns.is_not(None),  # a bucket's objects have none
            )
        )
        rows = self.session.execute(stmt)
        return {
            (p, size, mtime): sha
            for p, size, mtime, sha in rows
            if size is not None and mtime is not None
        }

    def claim(self, *, source_id: str, item: Found, run_id: str, now: datetime) -> bool:
        """Take a file for `run_id` unless some run of the source took it (same path and
        content) already: one INSERT ... ON CONFLICT, so racing polls take it once. A file taken
        already gets its size and change time recorded anew when they changed (its content did
        not), so the next poll need not read it."""
        dialect = postgresql if is_postgres(self.session) else sqlite
        insert = dialect.insert(SourceFile).values(
            tenant_id=self.tenant_id,
            source_id=source_id,
            path=item.path,
            sha256=item.sha256,
            size=item.size,
            mtime_ns=item.mtime_ns,
            run_id=run_id,
            taken_at=now,
        )
        stmt = insert.on_conflict_do_update(
            index_elements=["tenant_id", "source_id", "path", "sha256"],
            set_={"size": insert.excluded.size, "mtime_ns": insert.excluded.mtime_ns},
            where=SourceFile.size.is_distinct_from(insert.excluded.size)
            | SourceFile.mtime_ns.is_distinct_from(insert.excluded.mtime_ns),
        ).returning(SourceFile.run_id)
        # A row updated (taken by an earlier run) answers that run's id; this run's only when
        # inserted, as a re-run of a poll never claims (its run is recorded with the claim).
        return self.session.execute(stmt).scalar() == run_id

    def run_files(self, run_id: str) -> list[SourceFile]:
        stmt = self.base(SourceFile).where(SourceFile.run_id == run_id).order_by(SourceFile.path)
        return list(self.session.scalars(stmt))

    def unmoved_files(self, source_id: str, limit: int) -> list[SourceFile]:
        stmt = (
            self.base(SourceFile)
            .where(
                SourceFile.source_id == source_id,
                SourceFile.moved_to.is_(None),
                SourceFile.document_id.is_not(None),
            )
            .order_by(SourceFile.taken_at)
            .limit(limit)
        )
        return list(self.session.scalars(stmt))

    def ids_in_project(self, project_id: str) -> list[str]:
        return [s.id for s in self.list_for_project(project_id)]

    def delete_source(self, source_id: str) -> None:
        for model in (SourceFile, SourceRun):
            self.session.execute(
                self.scoped_delete(model)
                .where(model.source_id == source_id)
                .execution_options(synchronize_session=False)
            )
        self.session.execute(
            self.scoped_delete(Source)
            .where(Source.id == source_id)
            .execution_options(synchronize_session=False)
        )


@cross_tenant("the sources schedule's tick finds every tenant's sources due to be polled")
def find_due_sources(session: Session, now: datetime, limit: int) -> list[DueSource]:
    """The sources whose next poll is at or before `now`, of every tenant (ix_sources_due)."""
    if is_postgres(session):
        rows = session.execute(
            text("SELECT tenant_id, source_id, due_at FROM docflow_due_sources(:now, :limit)"),
            {"now": now, "limit": limit},
        ).all()
    else:
        stmt = (
            select(Source.tenant_id, Source.id, Source.next_poll_at)
            .where(Source.next_poll_at <= now)
            .order_by(Source.next_poll_at)
            .limit(limit)
        )
        rows = session.execute(stmt).all()
    return [DueSource(found_across_tenants(t), s, d) for t, s, d in rows]
