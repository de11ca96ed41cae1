"""The events earned trust emits, written to the outbox in the caller's transaction."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from docflow.events import envelopes
from docflow.events.models import OutboxEvent
from docflow.events.outbox import emit
from docflow.observability.metrics import TRUST_DRIFTS, count_after_commit


@dataclass(frozen=True, slots=True)
class Drift:
    """A field's measured precision at its cut (`cut`) fell below the target: the figures at
    that cut now, and the cut the estimate moved to (None: the field goes to review)."""

    workflow_id: str
    workflow_version: int
    field: str
    target_precision: float
    cut: float
    precision: float | None
    lower_bound: float | None
    examples: int
    new_cut: float | None


def trust_drifted(
    session: Session, *, tenant_id: str, project_id: str, drift: Drift
) -> OutboxEvent:
    """The field's precision drifted below the workflow's target (counted in
    `docflow_trust_drifts` once the transaction commits)."""
    count_after_commit(session, TRUST_DRIFTS, reason="precision_below_target")
    return emit(
        session,
        tenant_id=tenant_id,
        type=envelopes.WORKFLOW_TRUST_DRIFTED,
        subject=f"workflows/{drift.workflow_id}",
        data={
            "tenant_id": tenant_id,
            "project_id": project_id,
            "workflow_id": drift.workflow_id,
            "workflow_version": drift.workflow_version,
            "field": drift.field,
            "target_precision": drift.target_precision,
            "cut": drift.cut,
            "precision": drift.precision,
            "lower_bound": drift.lower_bound,
            "examples": drift.examples,
            "new_cut": drift.new_cut,
            "link": f"/v1/workflows/{drift.workflow_id}/trust",
        },
    )
