"""Re-running a batch: a new batch over the same stored files, against a version of the same
extraction workflow.

The re-run is an ordinary batch of the same project and workflow, pinned to the version asked
for (default: the workflow's current one), whose documents were uploaded already: each
carries the `storage_key`, size and SHA-256 of the document it re-runs, and the id of the
original upload (`source_document_id`; for a re-run of a re-run, still the original upload).
No byte is copied. Nothing in docflow deletes a document's stored file once its upload is
recorded (only bytes a refused or duplicate delivery left behind, under keys no document
records), so no batch can remove a file another batch still uses.

Only documents whose upload completed are re-run: one whose file never landed (still
PENDING_UPLOAD, or FAILED `not_uploaded` / `upload_expired`) has nothing to process and is
listed as skipped. The new batch starts at once, through the batch's own execution
(`triggers.enqueue_execution`, in the caller's transaction): its documents' flows are the
same durable pipeline an uploaded batch runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog
from dbos import DBOSClient
from sqlalchemy.orm import Session

from docflow.batches.models import Batch, BatchStatus
from docflow.batches.service import count_batch, get_batch
from docflow.batches.triggers import enqueue_execution
from docflow.documents.models import Document, DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.errors import Conflict, InvalidInput, NotFound
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.observability import tracing
from docflow.tenancy import TenantContext
from docflow.workflows.service import WorkflowView, get_workflow

log = structlog.get_logger(__name__)


class BatchNotStarted(Conflict):
    """The batch still takes uploads: which files it has is not settled yet."""

    code = "batch_not_started"


class NothingToRerun(Conflict):
    """None of the batch's documents has a stored file."""

    code = "nothing_to_rerun"


@dataclass(frozen=True)
class Rerun:
    """The new batch (documents in id order) and the original documents left out because
    their file never landed."""

    batch: Batch
    skipped: list[Document]


def record_rerun(
    session: Session,
    client: DBOSClient,
    tenant: TenantContext,
    *,
    batch_id: str,
    workflow_version: int | None,
) -> Rerun:
    """Record a re-run of one of the tenant's batches and enqueue its execution, in the
    caller's transaction; without the project's counters (the caller counts the batch with
    `count_batch`, as its last write). NotFound for another tenant's batch; InvalidInput
    (`workflow_version`) for a version the workflow does not have; BatchNotStarted while the
    batch takes uploads; NothingToRerun when none of its files landed."""
    original = get_batch(session, tenant, batch_id=batch_id)
    if original.status == BatchStatus.CREATED:
        raise BatchNotStarted(
            "the batch still takes uploads: start it (POST /v1/batches/{id}/start) or let it "
            "start, then re-run it"
        )
    workflow = _version(session, tenant, original, workflow_version)
    documents = DocumentRepository(session, tenant.tenant_id).in_batch(original.id)
    landed = [d for d in documents if d.storage_key is not None]
    if not landed:
        raise NothingToRerun("no document of the batch has a stored file")
    now = utcnow()
    batch = Batch(
        tenant_id=tenant.tenant_id,
        id=ids.new_id(ids.BATCH),
        project_id=original.project_id,
        workflow_id=workflow.id,
        workflow_version=workflow.version,
        status=BatchStatus.CREATED.value,
        document_count=len(landed),
        uploaded_count=len(landed),
        # Nothing to wait for: the execution is enqueued below, in this transaction.
        upload_deadline=now,
        created_at=now,
        updated_at=now,
        rerun_of=original.id,
        documents=[_again(d, now, workflow) for d in landed],
        traceparent=tracing.traceparent(),
    )
    session.add(batch)
    session.flush()
    enqueue_execution(session, client, batch)
    skipped = [d for d in documents if d.storage_key is None]
    log.info(
        "batch.rerun",
        tenant_id=tenant.tenant_id,
        batch_id=batch.id,
        rerun_of=original.id,
        workflow_version=workflow.version,
        documents=len(landed),
        skipped=len(skipped),
    )
    return Rerun(batch=batch, skipped=skipped)


def rerun_batch(
    session: Session,
    client: DBOSClient,
    tenant: TenantContext,
    *,
    batch_id: str,
    workflow_version: int | None,
) -> Rerun:
    """`record_rerun`, then the project's counters: everything in the caller's transaction."""
    rerun = record_rerun(
        session, client, tenant, batch_id=batch_id, workflow_version=workflow_version
    )
    count_batch(session, tenant, rerun.batch)
    return rerun


def _version(
    session: Session, tenant: TenantContext, original: Batch, version: int | None
) -> WorkflowView:
    try:
        return get_workflow(session, tenant, workflow_id=original.workflow_id, version=version)
    except NotFound as exc:
        raise InvalidInput(
            f"workflow {original.workflow_id} has no version {version}",
            field="workflow_version",
        ) from exc


def _again(source: Document, now: datetime, workflow: WorkflowView) -> Document:
    """A new document over `source`'s stored file, uploaded already, for `workflow`."""
    return Document(
        tenant_id=source.tenant_id,
        id=ids.new_id(ids.DOCUMENT),
        project_id=workflow.project_id,
        workflow_id=workflow.id,
        name=source.name,
        content_type=source.content_type,
        declared_size=source.declared_size,
        size=source.size,
        sha256=source.sha256,
        detected_type=source.detected_type,
        storage_key=source.storage_key,
        status=DocumentStatus.UPLOADED.value,
        uploaded_at=source.uploaded_at or now,
        created_at=now,
        updated_at=now,
        source_document_id=source.source_document_id or source.id,
    )
