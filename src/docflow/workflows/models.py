"""Extraction workflows (a tenant's field schema and thresholds) and their immutable versions.

Editing a workflow adds a version; `current_version` points at the newest; batches pin the
version they run with.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKeyConstraint, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, JSONType, UTCDateTime
from docflow.kit.clock import utcnow


class ExtractionWorkflow(Base):
    __tablename__ = "extraction_workflows"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "project_id"], ["projects.tenant_id", "projects.id"], ondelete="CASCADE"
        ),
        UniqueConstraint("tenant_id", "project_id", "name"),
        # "list workflows of a project, most recently updated first" (keyset on updated_at, id).
        Index(
            "ix_extraction_workflows_recent",
            "tenant_id",
            "project_id",
            "updated_at",
            "id",
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(40))
    name: Mapped[str] = mapped_column(String(200))
    current_version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ExtractionWorkflowVersion(Base):
    __tablename__ = "extraction_workflow_versions"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "workflow_id"],
            ["extraction_workflows.tenant_id", "extraction_workflows.id"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    # ExtractionWorkflowDefinition.model_dump(mode="json")
    definition: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # SHA-256 of the canonical JSON of the definition: "is this edit a change?" and cache keys.
    schema_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Who published it: "console <email>", an API key's id, or "operator" (the command line);
    # None for versions published before this was recorded (0024).
    published_by: Mapped[str | None] = mapped_column(String(320), nullable=True)
