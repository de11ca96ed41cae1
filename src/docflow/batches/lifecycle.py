"""Ending a batch early and removing batches and documents: cancel a batch, delete a batch,
delete one document, delete a project with its batches and sources, delete what a project's
retention no longer keeps.

Cancelling holds the batch (as its execution's start and every upload do), ends its documents
not yet terminal CANCELLED and the batch CANCELLED, and writes `docflow.batch.cancelled.v1`,
in one transaction. Its execution then stops by itself: a document flow not yet past its
extraction finds its document CANCELLED (or its batch cancelled) and does nothing more, one
whose engine was running records CANCELLED instead of its outcome (`documents.steps`), and the
batch's completion is never enqueued (the batch is no longer PROCESSING).

Deleting needs a terminal batch (409 `batch_running` otherwise: its execution would write to
rows that are gone). The rows go in the caller's transaction: the events about the batch and
its documents (outbox rows of subject `batches/<id>` or `documents/<id>`, published or not,
so the event archive and a replay no longer hold them), their webhook deliveries with their
attempts and the dead letters naming them; the search entries; the documents, and with them
their review claims, reviews and downstream records, by their foreign keys; then the batch.
The project's counters move. The stored files are returned for the caller to remove once the
transaction committed, so a rollback never leaves rows pointing at removed files (a crash in
between leaves unreferenced files, never read). Each deletion is audited as the structured
log line `batch.deleted` / `project.deleted_with_batches` naming the actor, and announced by
`docflow.batch.deleted.v1` (ids and counts; written after the others went, so it is the one
event about the batch that stays, for integrators and the archive).

The events go in set-based statements, `_CHUNK` subjects (and event ids) at a time, in an
order that meets the work still under way: the outbox rows first, so a delivery job opening
a delivery of one of them (`webhooks.steps.begin`, which share-locks the event) either opens
it before and its delivery goes next, or finds the event gone and ends; then the deliveries,
which wait for an attempt being recorded (`webhooks.steps`, which locks its delivery) and
leave a later one finding its delivery gone and ending; then the dead letters (one written
by that attempt included); after the documents, the outbox once more, for an event written
meanwhile about one of them (a review's, a delivery's downstream check). An event already
handed to a consumer meets a document that is gone: consumers re-read canonical state.

Deleting one document follows the same rules and path (`_remove_documents`): its batch must
be terminal (409 `batch_running`), then the events about the document, its deliveries and dead
letters, its search entry, the document (claims, reviews, downstream record by their foreign
keys) and its files go, as with its batch; the batch's counters lose it and its status is
computed again as a review does (`batches.service.uncount_document`), the project's document
count moves, and `docflow.document.deleted.v1` announces it (the one event about the document
that stays). The document is locked first, so a review of it either commits before (its new
status is what the counters lose) or finds it gone.

Retention (`projects.retention_days`) deletes through the same path: a batch's documents are
created with it, so a project's terminal batches created more than N days ago are deleted
whole (documents, files, results, claims, reviews, events, deliveries, dead letters), actor
`retention`, by the schedule (`batches.steps.apply_retention`). A batch not yet terminal
waits for its next pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import structlog
from sqlalchemy.orm import Session

from docflow.batches.events import batch_cancelled, batch_deleted
from docflow.batches.models import TERMINAL_BATCH_STATUSES, Batch
from docflow.batches.repository import BatchRepository
from docflow.batches.service import uncount_document
from docflow.documents.events import DocumentDeletion, document_deleted
from docflow.documents.service import (
    cancel_unfinished,
    delete_documents,
    document_ids,
    lock_document,
    stored_keys,
)
from docflow.errors import Conflict, get_one
from docflow.events.repository import DeadLetterRepository, OutboxRepository
from docflow.kit.clock import utcnow
from docflow.projects import service as projects
from docflow.projects.repository import ProjectRepository
from docflow.search.service import remove_batch as remove_search_entries
from docflow.search.service import remove_documents as remove_document_entries
from docflow.sources.service import delete_project_sources
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext
from docflow.webhooks.repository import WebhookRepository

log = structlog.get_logger(__name__)

# Who the retention schedule's deletions are attributed to in the audit log.
RETENTION_ACTOR = "retention"
# Subjects (and event ids) per statement when a batch's events go: bounded IN lists.
_CHUNK = 500


class BatchFinished(Conflict):
    """The batch is terminal already: there is nothing left to cancel."""

    code = "batch_finished"


class BatchRunning(Conflict):
    """The batch is not terminal: cancel it (or let it finish) before deleting it."""

    code = "batch_running"


def cancel_batch(session: Session, tenant: TenantContext, *, batch_id: str) -> Batch:
    """Cancel one of the tenant's batches that is not terminal; the batch afterwards. The
    caller commits. NotFound for a missing id or another tenant's, `BatchFinished` (409) when
    it is terminal already (a second cancellation included)."""
    repo = BatchRepository(session, tenant.tenant_id)
    batch = get_one(repo.lock(batch_id), "batch")
    if batch.status in TERMINAL_BATCH_STATUSES:
        raise BatchFinished(f"the batch is {batch.status} already", batch_status=batch.status)
    now = utcnow()
    cancelled = cancel_unfinished(session, tenant_id=tenant.tenant_id, batch_id=batch_id, now=now)
    batch = get_one(repo.set_cancelled(batch_id, cancelled=cancelled, now=now), "batch")
    log.info(
        "batch.cancelled",
        tenant_id=tenant.tenant_id,
        batch_id=batch_id,
        documents=cancelled,
        actor=tenant.actor,
    )
    batch_cancelled(session, batch)
    return batch


def delete_batch(session: Session, tenant: TenantContext, *, batch_id: str) -> list[str]:
    """Delete one of the tenant's terminal batches with its documents; the storage keys to
    remove after the commit (`remove_files`). NotFound for a missing id or another tenant's,
    `BatchRunning` (409) while it is not terminal."""
    batch = get_one(BatchRepository(session, tenant.tenant_id).get(batch_id), "batch")
    return _remove(session, tenant, batch)


def delete_project(
    session: Session, tenant: TenantContext, *, project_id: str, cascade: bool
) -> list[str]:
    """Delete one of the tenant's projects with its sources (their runs and taken files); the
    storage keys to remove after the commit.
    Without `cascade` a project with batches is refused (409); with it, its batches go first,
    each as `delete_batch` does, and any batch not terminal refuses it all (409
    `batch_running`). NotFound for a missing id or another tenant's."""
    project = projects.get_project(session, tenant, project_id=project_id)
    keys: list[str] = []
    if cascade:
        batches = BatchRepository(session, tenant.tenant_id).in_project(project_id)
        for batch in batches:
            keys += _remove(session, tenant, batch)
        session.expire(project)  # its counters moved in SQL
        if batches:
            log.info(
                "project.deleted_with_batches",
                tenant_id=tenant.tenant_id,
                project_id=project_id,
                batches=len(batches),
                actor=tenant.actor,
            )
    projects.delete_project(session, tenant, project_id=project_id)
    delete_project_sources(session, tenant, project_id=project_id)
    return keys


def expired_batches(
    session: Session, tenant: TenantContext, *, project_id: str, before: datetime, limit: int
) -> list[str]:
    """The ids of the project's oldest `limit` terminal batches created before `before`: what
    its retention deletes. A batch not yet terminal is never among them (its documents run)."""
    repo = BatchRepository(session, tenant.tenant_id)
    found = repo.created_before(
        project_id, before=before, statuses=TERMINAL_BATCH_STATUSES, limit=limit
    )
    return [batch.id for batch in found]


def delete_expired_batch(session: Session, tenant: TenantContext, *, batch_id: str) -> list[str]:
    """Delete one batch found by `expired_batches`, as `delete_batch` does (audited with the
    actor `retention`); the storage keys to remove after the commit. A batch gone meanwhile
    is no error (nothing to remove)."""
    batch = BatchRepository(session, tenant.tenant_id).get(batch_id)
    if batch is None:
        return []
    return _remove(session, tenant, batch, actor=RETENTION_ACTOR)


def _remove(
    session: Session, tenant: TenantContext, batch: Batch, *, actor: str | None = None
) -> list[str]:
    _check_terminal(batch)
    # A terminal batch stays terminal (a review moves it between terminal statuses only), so
    # it is read, not locked: its documents go first, then its row, the order in which a
    # review changes them (document, then the batch's counts), so the two never deadlock.
    keys, events = _remove_documents(session, tenant.tenant_id, batch)
    ProjectRepository(session, tenant.tenant_id).add_counts(
        batch.project_id, batches=-1, documents=-batch.document_count, now=utcnow()
    )
    BatchRepository(session, tenant.tenant_id).delete(batch.id)
    log.info(
        "batch.deleted",
        tenant_id=tenant.tenant_id,
        batch_id=batch.id,
        project_id=batch.project_id,
        documents=batch.document_count,
        files=len(keys),
        events=events,
        actor=actor or tenant.actor,
    )
    batch_deleted(session, batch, event_count=events, by_retention=actor == RETENTION_ACTOR)
    return keys


def delete_document(session: Session, tenant: TenantContext, *, document_id: str) -> list[str]:
    """Delete one of the tenant's documents, of a terminal batch, as deleting its batch
    deletes it (`_remove_documents`: its events, deliveries, dead letters, search entry,
    claims, reviews, downstream record), take it out of its batch's counters and settle the
    batch's status (`batches.service.uncount_document`), move the project's document count,
    audit it (`document.deleted`) and announce it (`docflow.document.deleted.v1`); the
    storage keys to remove after the commit (`remove_files`). NotFound for a missing id or
    another tenant's, `BatchRunning` (409) while its batch is not terminal."""
    # Locked first, then the batch's row, the order of a review: a review under way either
    # commits first (its status is read here afresh) or finds the document gone.
    document = lock_document(session, tenant, document_id=document_id)
    batch = get_one(BatchRepository(session, tenant.tenant_id).get(document.batch_id), "batch")
    _check_terminal(batch)
    status, uploaded = document.status, document.storage_key is not None
    keys, events = _remove_documents(session, tenant.tenant_id, batch, only=document.id)
    now = utcnow()
    uncount_document(session, tenant, batch_id=batch.id, status=status, uploaded=uploaded, now=now)
    ProjectRepository(session, tenant.tenant_id).add_counts(
        batch.project_id, batches=0, documents=-1, now=now
    )
    log.info(
        "document.deleted",
        tenant_id=tenant.tenant_id,
        document_id=document_id,
        batch_id=batch.id,
        files=len(keys),
        events=events,
        actor=tenant.actor,
    )
    document_deleted(
        session,
        DocumentDeletion(tenant.tenant_id, batch.project_id, batch.id, document_id, status, events),
    )
    return keys


def _check_terminal(batch: Batch) -> None:
    """`BatchRunning` (409) unless the batch is terminal: its execution, still under way,
    would write to rows that are gone."""
    if batch.status not in TERMINAL_BATCH_STATUSES:
        raise BatchRunning(
            f"batch {batch.id} is {batch.status}: cancel it or let it finish first",
            batch_id=batch.id,
            status=batch.status,
        )


def _remove_documents(
    session: Session, tenant_id: str, batch: Batch, *, only: str | None = None
) -> tuple[list[str], int]:
    """Delete the batch's documents (`only` that one, when given) with the events about them
    (and, for the whole batch, about the batch), in the order the module's docstring gives;
    (the storage keys to remove after the commit, how many events went)."""
    chosen = None if only is None else [only]
    keys = stored_keys(session, tenant_id=tenant_id, batch_id=batch.id, only=chosen)
    if chosen is None:
        documents = document_ids(session, tenant_id=tenant_id, batch_id=batch.id)
        subjects = [f"batches/{batch.id}", *(f"documents/{d}" for d in documents)]
    else:
        subjects = [f"documents/{only}"]
    events = _remove_events(session, tenant_id, subjects)
    if chosen is None:
        remove_search_entries(session, tenant_id=tenant_id, batch_id=batch.id)
    else:
        remove_document_entries(session, tenant_id=tenant_id, document_ids=chosen)
    delete_documents(session, tenant_id=tenant_id, batch_id=batch.id, only=chosen)
    outbox = OutboxRepository(session, tenant_id)
    events += sum(outbox.delete_about(chunk) for chunk in _chunks(subjects))
    return keys, events


def _remove_events(session: Session, tenant_id: str, subjects: Sequence[str]) -> int:
    """Delete the events about `subjects`, their webhook deliveries (and attempts) and the
    dead letters naming them, in that order (see the module's docstring); how many events."""
    outbox = OutboxRepository(session, tenant_id)
    deliveries = WebhookRepository(session, tenant_id)
    letters = DeadLetterRepository(session, tenant_id)
    removed = 0
    for chunk in _chunks(subjects):
        event_ids = outbox.ids_about(chunk)
        removed += outbox.delete_about(chunk)
        for ids in _chunks(event_ids):
            deliveries.delete_event_deliveries(ids)
            letters.delete_for_events(ids)
    return removed


def _chunks(values: Sequence[str]) -> Iterable[Sequence[str]]:
    return (values[i : i + _CHUNK] for i in range(0, len(values), _CHUNK))


def remove_files(storage: Storage, keys: Iterable[str]) -> int:
    """Remove deleted documents' stored files (an absent one is no error); how many keys were
    handled. A storage error is logged and the rest go on: what is left is unreferenced."""
    done = 0
    for key in keys:
        try:
            storage.delete(key)
        except Exception as exc:  # one stuck object must not keep the others
            log.warning("batch.file_not_removed", error_type=type(exc).__name__)
            continue
        done += 1
    return done
