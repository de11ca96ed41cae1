"""Queries for projects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from docflow.db import is_postgres
from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.projects.models import Project
from docflow.tenancy import TenantId, TenantRepository, cross_tenant, found_across_tenants

NEWEST_FIRST = (SortKey(Project.id, descending=True),)


class ProjectRepository(TenantRepository):
    def get(self, project_id: str) -> Project | None:
        return self.session.scalars(self.base(Project).where(Project.id == project_id)).first()

    def by_name(self, name: str) -> Project | None:
        return self.session.scalars(self.base(Project).where(Project.name == name)).first()

    def page(self, *, cursor: str | None, limit: int | None) -> Page[Project]:
        """Newest first (ids are time-ordered), served by the primary key."""
        return keyset_page(
            self.session, self.base(Project), order=NEWEST_FIRST, cursor=cursor, limit=limit
        )

    def add_counts(self, project_id: str, *, batches: int, documents: int, now: datetime) -> None:
        """Add to the counters in SQL, so concurrent batch creations never lose an increment."""
        stmt = (
            self.scoped_update(Project)
            .where(Project.id == project_id)
            .values(
                batch_count=Project.batch_count + batches,
                document_count=Project.document_count + documents,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        self.session.execute(stmt)

    def count(self) -> int:
        stmt = self.base(Project).with_only_columns(func.count()).order_by(None)
        return int(self.session.execute(stmt).scalar_one())


@dataclass(frozen=True, slots=True)
class Retention:
    """A project that keeps its batches `days` days."""

    tenant_id: TenantId
    project_id: str
    days: int


@cross_tenant("the retention schedule finds every tenant's projects that keep batches N days")
def find_retention_projects(session: Session, limit: int) -> list[Retention]:
    """The projects with a `retention_days`, of every tenant (ix_projects_retention)."""
    if is_postgres(session):
        rows = session.execute(
            text(
                "SELECT tenant_id, project_id, retention_days "
                "FROM docflow_retention_projects(:limit)"
            ),
            {"limit": limit},
        ).all()
    else:
        stmt = (
            select(Project.tenant_id, Project.id, Project.retention_days)
            .where(Project.retention_days.is_not(None))
            .order_by(Project.tenant_id, Project.id)
            .limit(limit)
        )
        rows = session.execute(stmt).all()
    return [Retention(found_across_tenants(t), p, int(d)) for t, p, d in rows]
