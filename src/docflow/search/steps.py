"""The step body of the search consumer: project the event's documents, under the event's
tenant, from canonical state (`service.project_document`); a document whose entry was written
has its downstream state checked in the same transaction (`documents.downstream.announce`)."""

from __future__ import annotations

import structlog

from docflow.documents import service as documents
from docflow.documents.downstream import announce
from docflow.documents.models import DocumentStatus
from docflow.events.consumers import ConsumerContext
from docflow.events.envelopes import BATCH_CANCELLED, Envelope
from docflow.kit.clock import utcnow
from docflow.kit.pagination import MAX_LIMIT
from docflow.runtime.context import services
from docflow.search.service import Projected, project_document
from docflow.tenancy import TenantContext, recorded_by_flow

log = structlog.get_logger(__name__)


def _document_ids(context: ConsumerContext, envelope: Envelope) -> list[str]:
    """The documents an event is about: its document, or a cancelled batch's cancelled ones."""
    if envelope.type != BATCH_CANCELLED:
        document_id = envelope.data.get("document_id")
        return [document_id] if isinstance(document_id, str) else []
    batch_id = envelope.data.get("batch_id")
    if not isinstance(batch_id, str):
        return []
    found: list[str] = []
    cursor: str | None = None
    tenant = TenantContext(tenant_id=recorded_by_flow(context.tenant_id))
    while True:
        page = documents.list_documents(
            context.session,
            tenant,
            batch_id=batch_id,
            status=DocumentStatus.CANCELLED.value,
            cursor=cursor,
            limit=MAX_LIMIT,
        )
        found += [d.id for d in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return found


def project(context: ConsumerContext, envelope: Envelope) -> None:
    """The search consumer's handler: bring the entries of the event's documents up to date
    (written in the consumer's transaction)."""
    s = services()
    for document_id in _document_ids(context, envelope):
        outcome = project_document(
            context.session,
            s.storage,
            tenant_id=recorded_by_flow(context.tenant_id),
            document_id=document_id,
            max_result_bytes=s.settings.max_document_bytes,
        )
        log.info("search.projected", document_id=document_id, outcome=outcome.value)
        if outcome == Projected.WRITTEN:
            announce(
                context.session,
                context.tenant_id,
                document_id,
                lag_seconds=s.settings.downstream_lag_seconds,
                now=utcnow(),
            )
