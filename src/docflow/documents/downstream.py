"""Where a document stands downstream: whether the projections built from its events hold the
document as it is now.

The search projection is required: a terminal document's entry must hold the document's
`version`. While it does not, the document is PENDING for `downstream_lag_seconds` after its
last change, then DEGRADED naming `search` in `lagging`. READY once every required projection
is current; a document still in flight owes nothing downstream yet (its projections read
NOT_APPLICABLE).

The webhook deliveries of the document's events are optional: one DEAD, or one still PENDING
`downstream_lag_seconds` after it was created, makes the document DEGRADED naming `webhooks`;
a delivery under way (PENDING within the setting) leaves the document as search has it.

Computed from the rows that exist: for a whole page of documents, one primary-key read of the
search entries, one of their events (by subject) and one of those events' deliveries.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, Document
from docflow.documents.schemas import Downstream, DownstreamState, ProjectionRead
from docflow.search.repository import SearchRepository
from docflow.webhooks.models import DeliveryStatus
from docflow.webhooks.repository import WebhookRepository

SEARCH = "search"
WEBHOOKS = "webhooks"
REQUIRED = frozenset({SEARCH})


def search_projection(
    document: Document, entry_version: int | None, *, lag: timedelta, now: datetime
) -> ProjectionRead:
    """The search projection of one document, given the version its entry holds (None: none)."""
    if document.status not in TERMINAL_DOCUMENT_STATUSES:
        return ProjectionRead(state=DownstreamState.NOT_APPLICABLE, version=entry_version)
    if entry_version is not None and entry_version >= document.version:
        return ProjectionRead(state=DownstreamState.READY, version=entry_version)
    behind = now - document.updated_at
    state = DownstreamState.PENDING if behind <= lag else DownstreamState.DEGRADED
    return ProjectionRead(state=state, version=entry_version)


def webhook_projection(
    deliveries: Sequence[tuple[str, datetime]], *, lag: timedelta, now: datetime
) -> ProjectionRead:
    """The webhook deliveries of one document's events, as (status, created) pairs."""
    if not deliveries:
        return ProjectionRead(state=DownstreamState.NOT_APPLICABLE, version=None)
    pending = [created for status, created in deliveries if status == DeliveryStatus.PENDING]
    if any(status == DeliveryStatus.DEAD for status, _ in deliveries) or any(
        now - created > lag for created in pending
    ):
        return ProjectionRead(state=DownstreamState.DEGRADED, version=None)
    state = DownstreamState.PENDING if pending else DownstreamState.READY
    return ProjectionRead(state=state, version=None)


def combine(projections: dict[str, ProjectionRead]) -> Downstream:
    """The document's state from its projections: DEGRADED when one is, else PENDING when a
    required one is, else READY."""
    states = {p.state for p in projections.values()}
    if DownstreamState.PENDING in states and not any(
        p.state == DownstreamState.PENDING for n, p in projections.items() if n in REQUIRED
    ):
        states.discard(DownstreamState.PENDING)
    behind = {DownstreamState.PENDING, DownstreamState.DEGRADED}
    lagging = [name for name, p in projections.items() if p.state in behind]
    if DownstreamState.DEGRADED in states:
        state = DownstreamState.DEGRADED
    elif DownstreamState.PENDING in states:
        state = DownstreamState.PENDING
    else:
        state = DownstreamState.READY
    return Downstream(state=state, projections=projections, lagging=lagging)


def downstream_of(
    session: Session,
    tenant_id: str,
    documents: Sequence[Document],
    *,
    lag_seconds: float,
    now: datetime,
) -> dict[str, Downstream]:
    """Each document's downstream state, by document id (one query for all of them)."""
    versions = SearchRepository(session, tenant_id).versions_of([d.id for d in documents])
    subjects = {f"documents/{d.id}": d.id for d in documents}
    deliveries: dict[str, list[tuple[str, datetime]]] = {d.id: [] for d in documents}
    webhooks = WebhookRepository(session, tenant_id)
    events = webhooks.subject_events(list(subjects))
    for event_id, status, created in webhooks.event_deliveries(list(events)):
        deliveries[subjects[events[event_id]]].append((status, created))
    lag = timedelta(seconds=lag_seconds)
    return {
        d.id: combine(
            {
                SEARCH: search_projection(d, versions.get(d.id), lag=lag, now=now),
                WEBHOOKS: webhook_projection(deliveries[d.id], lag=lag, now=now),
            }
        )
        for d in documents
    }
