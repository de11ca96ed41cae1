"""Queries for extraction workflows and their versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import tuple_

from docflow.kit.pagination import Page, SortKey, keyset_page
from docflow.tenancy import TenantRepository
from docflow.workflows.models import ExtractionWorkflow, ExtractionWorkflowVersion

# Served by ix_extraction_workflows_recent (tenant_id, project_id, updated_at, id), read backwards.
RECENTLY_UPDATED_FIRST = (
    SortKey(ExtractionWorkflow.updated_at, descending=True),
    SortKey(ExtractionWorkflow.id, descending=True),
)


class WorkflowRepository(TenantRepository):
    def get(self, workflow_id: str) -> ExtractionWorkflow | None:
        stmt = self.base(ExtractionWorkflow).where(ExtractionWorkflow.id == workflow_id)
        return self.session.scalars(stmt).first()

    def by_name(self, project_id: str, name: str) -> ExtractionWorkflow | None:
        stmt = self.base(ExtractionWorkflow).where(
            ExtractionWorkflow.project_id == project_id, ExtractionWorkflow.name == name
        )
        return self.session.scalars(stmt).first()

    def page(
        self, project_id: str, *, cursor: str | None, limit: int | None
    ) -> Page[ExtractionWorkflow]:
        stmt = self.base(ExtractionWorkflow).where(ExtractionWorkflow.project_id == project_id)
        return keyset_page(
            self.session, stmt, order=RECENTLY_UPDATED_FIRST, cursor=cursor, limit=limit
        )

    def version(self, workflow_id: str, version: int) -> ExtractionWorkflowVersion | None:
        stmt = self.base(ExtractionWorkflowVersion).where(
            ExtractionWorkflowVersion.workflow_id == workflow_id,
            ExtractionWorkflowVersion.version == version,
        )
        return self.session.scalars(stmt).first()

    def version_dates(
        self, workflow_id: str, *, limit: int
    ) -> list[tuple[int, datetime, str | None]]:
        """The workflow's newest `limit` version numbers with when and by whom each was
        published (by the primary key: tenant, workflow, version), newest first."""
        stmt = (
            self.base(ExtractionWorkflowVersion)
            .where(ExtractionWorkflowVersion.workflow_id == workflow_id)
            .with_only_columns(
                ExtractionWorkflowVersion.version,
                ExtractionWorkflowVersion.created_at,
                ExtractionWorkflowVersion.published_by,
            )
            .order_by(ExtractionWorkflowVersion.version.desc())
            .limit(limit)
        )
        return [(number, created, by) for number, created, by in self.session.execute(stmt)]

    def get_for_update(self, workflow_id: str) -> ExtractionWorkflow | None:
        """The workflow, row-locked on PostgreSQL so concurrent edits number versions in turn."""
        stmt = (
            self.base(ExtractionWorkflow)
            .where(ExtractionWorkflow.id == workflow_id)
            .with_for_update()
        )
        return self.session.scalars(stmt).first()

    def current_versions(
        self, workflows: list[ExtractionWorkflow]
    ) -> dict[str, ExtractionWorkflowVersion]:
        """The current version of each workflow, by workflow id, in one query."""
        if not workflows:
            return {}
        keys = [(w.id, w.current_version) for w in workflows]
        stmt = self.base(ExtractionWorkflowVersion).where(
            tuple_(ExtractionWorkflowVersion.workflow_id, ExtractionWorkflowVersion.version).in_(
                keys
            )
        )
        return {v.workflow_id: v for v in self.session.scalars(stmt)}

    def definitions(self, project_id: str | None) -> list[dict[str, Any]]:
        """The stored definition of every version of the tenant's workflows (of one project)."""
        stmt = self.base(ExtractionWorkflowVersion).with_only_columns(
            ExtractionWorkflowVersion.definition
        )
        if project_id is not None:
            owned = self.base(ExtractionWorkflow).where(ExtractionWorkflow.project_id == project_id)
            stmt = stmt.where(
                ExtractionWorkflowVersion.workflow_id.in_(
                    owned.with_only_columns(ExtractionWorkflow.id)
                )
            )
        return list(self.session.scalars(stmt))
