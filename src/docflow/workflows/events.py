"""The events the extraction workflows domain emits, built from its own rows and written to the
outbox in the caller's transaction (`docflow.events.outbox.emit`)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import emit
from docflow.workflows.models import ExtractionWorkflow, ExtractionWorkflowVersion


def workflow_published(
    session: Session, workflow: ExtractionWorkflow, version: ExtractionWorkflowVersion
) -> OutboxEvent:
    """A version of an extraction workflow was published (version 1 at creation)."""
    return emit(
        session,
        tenant_id=workflow.tenant_id,
        type=envelopes.WORKFLOW_PUBLISHED,
        subject=f"workflows/{workflow.id}",
        data={
            "tenant_id": workflow.tenant_id,
            "project_id": workflow.project_id,
            "workflow_id": workflow.id,
            "name": workflow.name,
            "version": version.version,
            "schema_hash": version.schema_hash,
            "link": f"/v1/workflows/{workflow.id}",
        },
    )
