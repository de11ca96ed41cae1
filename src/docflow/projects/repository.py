"""Queries for projects."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func

from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.projects.models import Project
from docflow.tenancy import TenantRepository

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
