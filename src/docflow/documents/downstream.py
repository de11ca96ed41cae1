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
search entries, one of their events (by subject) and one of those events' deliveries. The
deliveries of `docflow.document.downstream_changed.v1` events are not counted: the announcement
of a state must not change the state it announces (a dead delivery of "DEGRADED -> READY" would
degrade the document again, whose next announcement could die too, and so on).

`announce` records the state and emits its event when it changed; see its docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import structlog
from sqlalchemy.orm import Session

from docflow.documents.events import DownstreamChange, downstream_changed
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES, AnnouncedState, Document
from docflow.documents.repository import DocumentRepository, DownstreamRepository
from docflow.documents.schemas import DocumentRead, Downstream, DownstreamState, ProjectionRead
from docflow.search.repository import SearchRepository
from docflow.webhooks.models import DeliveryStatus
from docflow.webhooks.repository import WebhookRepository

log = structlog.get_logger(__name__)

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


def read_with_downstream(
    session: Session,
    tenant_id: str,
    documents: Sequence[Document],
    *,
    lag_seconds: float,
    now: datetime,
) -> list[DocumentRead]:
    """The documents as the API reads them in a list: each with its downstream state."""
    states = downstream_of(session, tenant_id, documents, lag_seconds=lag_seconds, now=now)
    items = [DocumentRead.model_validate(d) for d in documents]
    for item in items:
        item.downstream = states[item.id]
    return items


def announce(
    session: Session, tenant_id: str, document_id: str, *, lag_seconds: float, now: datetime
) -> DownstreamChange | None:
    """Check a document's downstream state and, when it moved between READY and DEGRADED,
    record the new state and emit `docflow.document.downstream_changed.v1`, both in the
    session's transaction; the change, or None when nothing changed.

    Called when the document's search entry is written, when a webhook delivery of one of its
    events is delivered or dies, and by the periodic pass for lag (`documents.flows`). The
    record changes only by compare-and-set on its state, so of two checks that saw the same
    change only one records it and emits the event. PENDING (a projection catching up within
    the setting) records nothing; neither does a document in flight. A document's first state
    is recorded silently when READY (subscribers learnt of the document from its outcome
    event; an announcement of every document's READY would double their traffic) and
    announced when DEGRADED, with `from_state` null."""
    document = DocumentRepository(session, tenant_id).get(document_id, fresh=True)
    if (
        document is None
        or document.status not in TERMINAL_DOCUMENT_STATUSES
        or document.project_id is None
    ):
        return None
    current = downstream_of(session, tenant_id, [document], lag_seconds=lag_seconds, now=now)[
        document.id
    ]
    if current.state not in (DownstreamState.READY, DownstreamState.DEGRADED):
        return None
    target = AnnouncedState(current.state.value)
    lagging = list(current.lagging) if target == AnnouncedState.DEGRADED else []
    repo = DownstreamRepository(session, tenant_id)
    recorded = repo.get(document_id)
    if recorded is None:
        if repo.insert_first(
            document_id, state=target.value, lagging=lagging, version=document.version, now=now
        ):
            if target == AnnouncedState.READY:
                return None
            return _emit(session, document, None, target, current)
        recorded = repo.get(document_id)  # a concurrent check recorded it first
        if recorded is None:
            return None
    if recorded.state == target.value:
        return None
    if not repo.compare_and_set(
        document_id,
        expected=recorded.state,
        state=target.value,
        lagging=lagging,
        version=document.version,
        now=now,
    ):
        return None
    return _emit(session, document, recorded.state, target, current)


def _emit(
    session: Session,
    document: Document,
    from_state: str | None,
    to_state: AnnouncedState,
    current: Downstream,
) -> DownstreamChange:
    change = DownstreamChange(
        tenant_id=document.tenant_id,
        project_id=str(document.project_id),
        batch_id=document.batch_id,
        document_id=document.id,
        from_state=from_state,
        to_state=to_state.value,
        lagging=list(current.lagging) if to_state == AnnouncedState.DEGRADED else [],
        projections={name: p.state.value for name, p in current.projections.items()},
        version=document.version,
    )
    downstream_changed(session, change)
    log.info(
        "document.downstream_changed",
        tenant_id=document.tenant_id,
        document_id=document.id,
        from_state=from_state,
        to_state=to_state.value,
        lagging=change.lagging,
    )
    return change
