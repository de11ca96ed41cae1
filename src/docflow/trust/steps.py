"""The body of the `trust` consumer's step: learning from a review (`service.learn`)."""

from __future__ import annotations

import structlog

from docflow.events.consumers import ConsumerContext
from docflow.events.envelopes import Envelope
from docflow.kit.clock import utcnow
from docflow.runtime.context import services
from docflow.tenancy import TenantContext, recorded_by_flow
from docflow.trust.service import learn

log = structlog.get_logger(__name__)


def learn_from_review(context: ConsumerContext, envelope: Envelope) -> None:
    """Make the reviewed document examples of its workflow version and recalibrate its fields,
    in the consumer's transaction; nothing with DOCFLOW_LEARNING off."""
    s = services()
    if not s.settings.learning:
        return
    document_id = str(envelope.data["document_id"])
    drifts = learn(
        context.session,
        TenantContext(tenant_id=recorded_by_flow(context.tenant_id)),
        s.storage,
        document_id=document_id,
        max_result_bytes=s.settings.max_document_bytes,
        now=utcnow(),
    )
    log.info("trust.learned", document_id=document_id, drifts=len(drifts))
