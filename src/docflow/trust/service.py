"""Use cases of earned trust: learning from a review (evidence, then recalibration), the
field cuts the document flow's gate reads, and the per-field view shown to the tenant.

`learn` runs in the `trust` event consumer (off the review's request path, retried and
idempotent like every consumer): it rebuilds the reviewed document's examples
(`evidence.record_evidence`) and re-estimates each field of its workflow version
(`estimate.estimate`), announcing a drift when the precision at a field's cut fell below the
target (`events.trust_drifted`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy.orm import Session

from docflow.documents.outcome import batch_facts
from docflow.documents.service import document_result, get_fresh
from docflow.errors import NotFound
from docflow.extraction.definition import ColdStart, ExtractionWorkflowDefinition, FieldType
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext
from docflow.trust.estimate import (
    COLD_START_EXAMPLES,
    WINDOW,
    Estimate,
    Example,
    estimate,
    lower_at,
)
from docflow.trust.events import Drift, trust_drifted
from docflow.trust.evidence import record_evidence
from docflow.trust.gate import FieldCut
from docflow.trust.models import FieldTrust
from docflow.trust.repository import TrustRepository
from docflow.workflows.service import get_workflow

log = structlog.get_logger(__name__)


def learn(
    session: Session,
    tenant: TenantContext,
    storage: Storage,
    *,
    document_id: str,
    max_result_bytes: int,
    now: datetime,
) -> list[Drift]:
    """Make the document, as its latest review left it, examples of its workflow version and
    re-estimate that version's fields; the drifts found (each announced). A document deleted
    since its review (with its batch) teaches nothing: its examples went with it."""
    try:
        document = get_fresh(session, tenant, document_id=document_id)
    except NotFound:
        return []
    facts = batch_facts(session, tenant.tenant_id, document.batch_id)
    result = document_result(storage, document, max_bytes=max_result_bytes)
    fields = record_evidence(
        session,
        tenant,
        document=document,
        result=result,
        definition=facts.definition,
        workflow_version=facts.workflow_version,
    )
    drifts = recalibrate(
        session,
        tenant,
        workflow_id=facts.workflow_id,
        version=facts.workflow_version,
        definition=facts.definition,
        fields=fields,
        now=now,
    )
    for drift in drifts:
        trust_drifted(session, tenant_id=tenant.tenant_id, project_id=facts.project_id, drift=drift)
        log.warning(
            "trust.drifted",
            tenant_id=tenant.tenant_id,
            workflow_id=drift.workflow_id,
            workflow_version=drift.workflow_version,
            field=drift.field,
        )
    return drifts


def _drift(
    row: FieldTrust | None, examples: list[Example], found: Estimate, target: float
) -> Drift | None:
    if row is None or row.cut is None:
        return None
    lower = lower_at(examples, row.cut)
    if lower is None or lower >= target:
        return None
    above = [e for e in examples[-WINDOW:] if e.confidence >= row.cut]
    return Drift(
        workflow_id=row.workflow_id,
        workflow_version=row.workflow_version,
        field=row.field,
        target_precision=target,
        cut=row.cut,
        precision=sum(e.correct for e in above) / len(above),
        lower_bound=lower,
        examples=len(examples[-WINDOW:]),
        new_cut=found.cut,
    )


def recalibrate(
    session: Session,
    tenant: TenantContext,
    *,
    workflow_id: str,
    version: int,
    definition: ExtractionWorkflowDefinition,
    fields: set[str],
    now: datetime,
) -> list[Drift]:
    """Estimate `fields` of the version again from their examples and keep the estimates;
    the fields whose precision at their former cut fell below the target."""
    repo = TrustRepository(session, tenant.tenant_id)
    current = repo.estimates(workflow_id, version)
    drifts = []
    for name in sorted(fields):
        examples = [
            Example(c, r) for c, r in repo.examples(workflow_id, version, name, limit=WINDOW)
        ]
        found = estimate(examples, target=definition.target_precision)
        row = current.get(name)
        drift = _drift(row, examples, found, definition.target_precision)
        if row is None:
            row = FieldTrust(
                tenant_id=tenant.tenant_id,
                workflow_id=workflow_id,
                workflow_version=version,
                field=name,
            )
            _assign(row, found, now)
            repo.add_estimate(row)
        else:
            _assign(row, found, now)
        if drift is not None:
            row.drifted_at = now
            drifts.append(drift)
    return drifts


def _assign(row: FieldTrust, found: Estimate, now: datetime) -> None:
    row.examples = found.examples
    row.correct = found.correct
    row.cut = found.cut
    row.precision = found.precision
    row.lower_bound = found.lower_bound
    row.automation_rate = found.automation_rate
    row.updated_at = now


def field_cuts(
    session: Session, tenant: TenantContext, *, workflow_id: str, version: int
) -> dict[str, FieldCut]:
    """The version's field cuts as the last recalibration left them (one query)."""
    rows = TrustRepository(session, tenant.tenant_id).estimates(workflow_id, version)
    return {name: FieldCut(row.cut, row.examples) for name, row in rows.items()}


@dataclass(frozen=True, slots=True)
class FieldTrustView:
    """A field's trust as shown: examples, precision at the cut, automation rate, and how its
    values are decided now (`trusted`: at or above `cut`; `review`: every value goes to
    review; `thresholds`: by `review_threshold`, not measured yet)."""

    name: str
    examples: int
    correct: int
    cut: float | None
    precision: float | None
    lower_bound: float | None
    automation_rate: float
    decided_by: str
    drifted_at: datetime | None


@dataclass(frozen=True, slots=True)
class TrustView:
    workflow_id: str
    version: int
    target_precision: float
    qa_sample_rate: float
    cold_start: str
    learning: bool
    fields: list[FieldTrustView]


def _decided_by(definition: ExtractionWorkflowDefinition, row: FieldTrust | None) -> str:
    if row is not None and row.cut is not None:
        return "trusted"
    examples = row.examples if row is not None else 0
    if definition.cold_start == ColdStart.THRESHOLDS and examples < COLD_START_EXAMPLES:
        return "thresholds"
    return "review"


def trust_view(
    session: Session,
    tenant: TenantContext,
    *,
    workflow_id: str,
    version: int | None,
    learning: bool,
) -> TrustView:
    """Per scalar field of the workflow's version (default the latest): its reviewed
    examples, measured precision at the current cut and automation rate. NotFound for a
    missing workflow or version, or another tenant's."""
    workflow = get_workflow(session, tenant, workflow_id=workflow_id, version=version)
    definition = workflow.definition
    rows = TrustRepository(session, tenant.tenant_id).estimates(workflow_id, workflow.version)
    fields = []
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            continue
        row = rows.get(field.name)
        fields.append(
            FieldTrustView(
                name=field.name,
                examples=row.examples if row else 0,
                correct=row.correct if row else 0,
                cut=row.cut if row else None,
                precision=row.precision if row else None,
                lower_bound=row.lower_bound if row else None,
                automation_rate=row.automation_rate if row else 0.0,
                decided_by=_decided_by(definition, row) if learning else "thresholds",
                drifted_at=row.drifted_at if row else None,
            )
        )
    return TrustView(
        workflow_id=workflow_id,
        version=workflow.version,
        target_precision=definition.target_precision,
        qa_sample_rate=definition.qa_sample_rate,
        cold_start=definition.cold_start.value,
        learning=learning,
        fields=fields,
    )
