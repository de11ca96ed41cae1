"""Use cases for sources, and the parts of a poll.

A source is a folder under the server's sources root or a key prefix in its sources bucket
(`sources.places`), confined under `<root>/<tenant id>/` when it is set and at every poll. A
poll:
1. `settle`: files taken earlier whose documents are terminal are moved to `processed/` or
   `failed/` (by the document's outcome) when the source says so.
2. `claim`: the source is listed (its `processed/` and `failed/` places and hidden files left
   out, each file keyed by its content: SHA-256, or an object's ETag; a folder's file whose
   path, size and change time are those recorded when it was taken keeps its recorded hash,
   unread); in one write transaction
   every file no run of the source took yet (same path, same content key) is claimed for this
   run (an INSERT that does nothing on a conflict, so a concurrent poll or a re-run of this one
   takes it once), and the claimed files become one batch with the source's workflow
   (`batches.service.create_batch`). A re-run of a poll whose claim committed finds its run and
   claims nothing more. A folder that cannot be read, or a bucket that refuses access or is
   gone, marks the source unhealthy with the reason, and the run records it.
3. `upload`: each claimed file still waiting is stored and recorded through the upload service
   (`uploads.service.land_upload`, as a `PUT /v1/uploads/{token}` is), then the batch starts
   (`triggers.request_start`): a file that vanished meanwhile fails `not_uploaded`, one over
   the size limit `file_too_large`, and an unsupported type fails in its document flow as any
   upload's would.
"""

from __future__ import annotations

import mimetypes
from datetime import datetime, timedelta
from pathlib import PurePosixPath

import structlog
from croniter import CroniterBadDateError, croniter
from dbos import DBOSClient, EnqueueOptions
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches import triggers
from docflow.batches.service import DocumentSpec, create_batch
from docflow.config import Settings
from docflow.documents.models import DocumentStatus
from docflow.documents.repository import DocumentRepository
from docflow.documents.service import NOT_UPLOADED, fail_document
from docflow.documents.uploads.service import land_upload
from docflow.documents.uploads.urls import UploadGrant
from docflow.errors import Conflict, DomainError, InvalidInput, get_one
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.projects.service import get_project
from docflow.quotas import service as quotas
from docflow.runtime.context import BATCHES_QUEUE
from docflow.sources.models import Source, SourceFile, SourceRun
from docflow.sources.places import (
    FAILED,
    PROCESSED,
    Found,
    Place,
    SourceChanged,
    SourceUnreadable,
)
from docflow.sources.repository import SourceRepository, find_due_sources
from docflow.storage.base import Storage, TooLarge
from docflow.tenancy import TenantContext, recorded_by_flow
from docflow.tenants import status as tenant_status
from docflow.workflows.service import get_workflow

log = structlog.get_logger(__name__)

POLL_FLOW = "docflow.source_poll"
SOURCE_PREFIX = "src"
FILE_TOO_LARGE = "file_too_large"
SOURCE_CHANGED = "source_changed"
# Due sources enqueued per tick at most; the rest are due at the next one.
DUE_PAGE = 500
# Files moved per poll at most; the rest at the next poll.
SETTLE_PAGE = 1000
# The time a claimed file has to be stored: it is stored by the same poll, right away.
_UPLOAD_WINDOW = timedelta(hours=1)
_MOVED_BY_STATUS = {
    DocumentStatus.SUCCEEDED.value: PROCESSED,
    DocumentStatus.REVIEW_REQUIRED.value: PROCESSED,
    DocumentStatus.FAILED.value: FAILED,
    DocumentStatus.CANCELLED.value: FAILED,
}


# --- checks --------------------------------------------------------------------------------


def check_cron(cron: str, *, field: str = "cron") -> str:
    """A cron expression of 5 fields (`min hour day month weekday`) or 6 (seconds first, as the
    durable scheduler reads them); InvalidInput otherwise."""
    cron = cron.strip()
    fields = len(cron.split())
    if fields not in (5, 6) or not croniter.is_valid(cron, second_at_beginning=fields == 6):
        raise InvalidInput(f"{cron!r} is not a cron expression", field=field)
    try:
        next_poll(cron, utcnow())
    except CroniterBadDateError:  # well formed, and no date matches ("0 0 30 2 *")
        raise InvalidInput(f"{cron!r} matches no date", field=field) from None
    return cron


def next_poll(cron: str, after: datetime) -> datetime:
    """The first time `cron` matches strictly after `after`."""
    six = len(cron.split()) == 6
    it = croniter(cron, after, second_at_beginning=six)
    found: datetime = it.get_next(datetime)
    return found


def enabled(place: Place | None) -> Place:
    """The server's sources root; InvalidInput on `path` when the server has none."""
    if place is None:
        raise InvalidInput(
            "sources are not enabled on this server (DOCFLOW_SOURCES_ROOT or DOCFLOW_SOURCES_URL)",
            field="path",
        )
    return place


def _nested(a: str, b: str) -> bool:
    """Whether one of the folders `a` and `b` (relative, normalised) is the other or lies in it."""
    pa, pb = PurePosixPath(a).parts, PurePosixPath(b).parts  # "." has no parts: it holds all
    shorter = min(len(pa), len(pb))
    return pa[:shorter] == pb[:shorter]


# --- use cases -----------------------------------------------------------------------------


def create_source(
    session: Session,
    tenant: TenantContext,
    *,
    place: Place | None,
    project_id: str,
    workflow_id: str,
    path: str,
    cron: str,
    move_after: bool,
    paused: bool,
) -> Source:
    """Record a source of the project, first polled at its cron's next time."""
    get_project(session, tenant, project_id=project_id)
    get_workflow(session, tenant, workflow_id=workflow_id)
    path = enabled(place).locate(tenant.tenant_id, path)  # one spelling: "a/./b/" is "a/b"
    repo = SourceRepository(session, tenant.tenant_id)
    for other in repo.paths():
        if _nested(path, other):
            raise Conflict(
                f"path overlaps the source on {other!r}: each file would be taken by both",
                field="path",
            )
    cron = check_cron(cron)
    now = utcnow()
    source = Source(
        tenant_id=tenant.tenant_id,
        id=ids.new_id(SOURCE_PREFIX),
        project_id=project_id,
        workflow_id=workflow_id,
        path=path,
        cron=cron,
        move_after=move_after,
        paused=paused,
        healthy=True,
        next_poll_at=None if paused else next_poll(cron, now),
        created_at=now,
        updated_at=now,
    )
    repo.add(source)
    log.info("source.created", tenant_id=tenant.tenant_id, source_id=source.id)
    return source


def get_source(
    session: Session, tenant: TenantContext, *, project_id: str, source_id: str
) -> Source:
    source = get_one(SourceRepository(session, tenant.tenant_id).get(source_id), "source")
    if source.project_id != project_id:
        return get_one(None, "source")
    return source


def list_sources(session: Session, tenant: TenantContext, *, project_id: str) -> list[Source]:
    get_project(session, tenant, project_id=project_id)
    return SourceRepository(session, tenant.tenant_id).list_for_project(project_id)


def update_source(
    session: Session,
    tenant: TenantContext,
    *,
    place: Place | None,
    project_id: str,
    source_id: str,
    paused: bool | None = None,
    cron: str | None = None,
    workflow_id: str | None = None,
    move_after: bool | None = None,
) -> Source:
    """Pause or resume a source, change its cron, workflow or whether files are moved. A source
    left active must still be one `create_source` accepts (InvalidInput on `path` when the
    server's sources root has since come to hold docflow's home or keys)."""
    source = get_source(session, tenant, project_id=project_id, source_id=source_id)
    if workflow_id is not None:
        get_workflow(session, tenant, workflow_id=workflow_id)
        source.workflow_id = workflow_id
    if cron is not None:
        source.cron = check_cron(cron)
    if move_after is not None:
        source.move_after = move_after
    if paused is not None:
        source.paused = paused
    if not source.paused and place is not None:
        place.locate(tenant.tenant_id, source.path)
    now = utcnow()
    if cron is not None or paused is not None:
        source.next_poll_at = None if source.paused else next_poll(source.cron, now)
    source.updated_at = now
    session.flush()
    return source


def delete_source(
    session: Session, tenant: TenantContext, *, project_id: str, source_id: str
) -> None:
    """Forget a source, its runs and its taken files (its batches stay)."""
    get_source(session, tenant, project_id=project_id, source_id=source_id)
    SourceRepository(session, tenant.tenant_id).delete_source(source_id)


def delete_project_sources(session: Session, tenant: TenantContext, *, project_id: str) -> int:
    """Forget every source of a project being deleted, with their runs and taken files, in the
    caller's transaction; how many. A poll of one of them still under way then finds its
    source (or its run) gone and ends taking nothing, as after `delete_source`."""
    repo = SourceRepository(session, tenant.tenant_id)
    source_ids = repo.ids_in_project(project_id)
    for source_id in source_ids:
        repo.delete_source(source_id)
    if source_ids:
        log.info(
            "project.sources_deleted",
            tenant_id=tenant.tenant_id,
            project_id=project_id,
            sources=source_ids,
            actor=tenant.actor,
        )
    return len(source_ids)


def list_runs(
    session: Session,
    tenant: TenantContext,
    *,
    project_id: str,
    source_id: str,
    cursor: str | None,
    limit: int,
) -> Page[SourceRun]:
    """The source's runs, newest first, one page after `cursor`."""
    get_source(session, tenant, project_id=project_id, source_id=source_id)
    repo = SourceRepository(session, tenant.tenant_id)
    return repo.page_runs(source_id, cursor=cursor, limit=limit)


def enqueue_poll(
    session: Session, client: DBOSClient, *, tenant_id: str, source_id: str, run_id: str
) -> None:
    """Enqueue a poll of the source in the session's transaction (once per `run_id`)."""
    options: EnqueueOptions = {
        "workflow_name": POLL_FLOW,
        "queue_name": BATCHES_QUEUE,
        "workflow_id": run_id,
        "queue_partition_key": tenant_id,
    }
    client.enqueue_in_transaction(session, options, tenant_id, source_id, run_id)


def poll_now(
    session: Session, client: DBOSClient, tenant: TenantContext, *, project_id: str, source_id: str
) -> str:
    """Enqueue a poll of the source now, paused or not; the id of its run."""
    get_source(session, tenant, project_id=project_id, source_id=source_id)
    run_id = f"source:{source_id}:now:{ids.ulid()}"
    enqueue_poll(session, client, tenant_id=tenant.tenant_id, source_id=source_id, run_id=run_id)
    return run_id


def scheduled_run_id(source_id: str, due_at: datetime) -> str:
    """The run id of a source's scheduled poll: one per source and due time."""
    return f"source:{source_id}:{due_at.isoformat()}"


def enqueue_due(write_factory: sessionmaker[Session], client: DBOSClient, *, now: datetime) -> int:
    """The schedule's tick: every due source's next poll moves to its cron's next time after
    `now` (compare-and-set, so two ticks move it once) and its poll is enqueued in the same
    transaction, with an id from the source and its due time; how many were enqueued."""
    with write_factory() as session:
        due = find_due_sources(session, now, DUE_PAGE)
    enqueued = 0
    for item in due:
        with write_factory() as session, session.begin():
            repo = SourceRepository(session, item.tenant_id)
            source = repo.get(item.source_id)
            if source is None or source.next_poll_at != item.due_at:
                continue
            if not repo.advance(source.id, due_at=item.due_at, next_at=next_poll(source.cron, now)):
                continue
            run_id = scheduled_run_id(source.id, item.due_at)
            enqueue_poll(
                session, client, tenant_id=item.tenant_id, source_id=source.id, run_id=run_id
            )
            enqueued += 1
    return enqueued


# --- the poll ------------------------------------------------------------------------------


def _content_type(path: str) -> str:
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "application/octet-stream"


def _unhealthy(
    write_factory: sessionmaker[Session], tenant_id: str, source_id: str, run_id: str, reason: str
) -> None:
    with write_factory() as session, session.begin():
        repo = SourceRepository(session, recorded_by_flow(tenant_id))
        source = repo.get(source_id)
        if source is None:
            return
        now = utcnow()
        source.healthy = False
        source.last_error = reason
        source.last_poll_at = now
        if repo.get_run(run_id) is None:
            session.add(
                SourceRun(
                    tenant_id=tenant_id,
                    id=run_id,
                    source_id=source_id,
                    started_at=now,
                    error=reason,
                )
            )
    log.warning("source.unhealthy", tenant_id=tenant_id, source_id=source_id, reason=reason)


def claim(
    write_factory: sessionmaker[Session],
    *,
    place: Place | None,
    tenant_id: str,
    source_id: str,
    run_id: str,
    settings: Settings,
) -> str | None:
    """Claim the source's new files for `run_id` and make them one batch, counted in the
    tenant's quotas like any batch; the batch's id (None when nothing was taken, the folder
    could not be read, the month's quota is used up, or the source is gone). A re-run of the
    same run answers the batch it made."""
    max_bytes = settings.max_document_bytes
    with write_factory() as session:
        repo = SourceRepository(session, recorded_by_flow(tenant_id))
        run = repo.get_run(run_id)
        if run is not None:
            return run.batch_id
        source = repo.get(source_id)
        if source is None:
            return None
        path = source.path
        known = repo.known(source_id)
    try:
        changed_before = utcnow().timestamp() - settings.sources_settle_seconds
        found = enabled(place).scan(
            tenant_id, path, max_bytes=max_bytes, changed_before=changed_before, known=known
        )
    except (InvalidInput, SourceUnreadable, OSError) as exc:
        _unhealthy(write_factory, tenant_id, source_id, run_id, str(exc))
        return None
    tenant = TenantContext(recorded_by_flow(tenant_id))
    try:
        return _take(write_factory, tenant, run_id, source_id, found, settings, max_bytes)
    except DomainError as exc:
        # A refusal of the batch (its project or workflow deleted since, the month's quota used
        # up, the tenant suspended): nothing is taken, and the next poll tries again.
        _unhealthy(write_factory, tenant_id, source_id, run_id, f"{exc.code}: {exc}")
        return None


def _take(
    write_factory: sessionmaker[Session],
    tenant: TenantContext,
    run_id: str,
    source_id: str,
    found: list[Found],
    settings: Settings,
    max_bytes: int,
) -> str | None:
    tenant_id = tenant.tenant_id
    with write_factory() as session, session.begin():
        repo = SourceRepository(session, tenant.tenant_id)
        if repo.get_run(run_id) is not None:  # a concurrent re-run of this poll won
            return None
        source = repo.get(source_id)
        if source is None:  # deleted meanwhile
            return None
        tenant_status.require_active(session, tenant_id)
        project_id, workflow_id = source.project_id, source.workflow_id
        plan = settings.plan(quotas.plan_name(session, tenant_id))
        max_documents = quotas.max_batch_documents(settings, plan)
        now = utcnow()
        taken: list[Found] = []
        for item in found:
            if len(taken) >= max_documents:
                break  # the rest at the next poll
            if repo.claim(source_id=source_id, item=item, run_id=run_id, now=now):
                taken.append(item)
        batch_id = None
        if taken:
            batch = create_batch(
                session,
                tenant,
                project_id=project_id,
                workflow_id=workflow_id,
                documents=[
                    DocumentSpec(
                        name=item.path[-255:],
                        content_type=_content_type(item.path),
                        size=min(item.size, max_bytes),
                    )
                    for item in taken
                ],
                scheduled_for=None,
                upload_deadline=now + _UPLOAD_WINDOW,
                max_documents=max_documents,
                max_document_bytes=max_bytes,
            )
            quotas.charge_batch(session, tenant, documents=batch.document_count, plan=plan)
            batch_id = batch.id
            by_name = {d.name: d.id for d in batch.documents}
            for file in repo.run_files(run_id):
                file.document_id = by_name[file.path[-255:]]
        session.add(
            SourceRun(
                tenant_id=tenant_id,
                id=run_id,
                source_id=source_id,
                started_at=now,
                files_seen=len(found),
                files_taken=len(taken),
                files_skipped=len(found) - len(taken),
                batch_id=batch_id,
            )
        )
        source.healthy = True
        source.last_error = None
        source.last_poll_at = now
    log.info(
        "source.polled",
        tenant_id=tenant_id,
        source_id=source_id,
        seen=len(found),
        taken=len(taken),
        hashed_bytes=sum(item.hashed for item in found),
        batch_id=batch_id,
    )
    return batch_id


def upload(
    write_factory: sessionmaker[Session],
    storage: Storage,
    client: DBOSClient,
    *,
    place: Place | None,
    tenant_id: str,
    run_id: str,
    max_bytes: int,
) -> None:
    """Store the run's claimed files still waiting through the upload service, then start the
    batch (safe to repeat: a file recorded already is left as it is)."""
    with write_factory() as session:
        repo = SourceRepository(session, recorded_by_flow(tenant_id))
        run = repo.get_run(run_id)
        if run is None:  # the source was deleted, with its runs
            return
        files = [(_found(f), f.document_id) for f in repo.run_files(run_id) if f.document_id]
        source = repo.get(run.source_id)
        source_path = source.path if source is not None else None
        batch_id = run.batch_id
        docs = DocumentRepository(session, tenant_id)
        waiting = {
            document_id
            for _, document_id in files
            if (d := docs.get(document_id)) is not None
            and d.status == DocumentStatus.PENDING_UPLOAD
        }
    if batch_id is None:
        return
    expires = int((utcnow() + _UPLOAD_WINDOW).timestamp())
    for found, document_id in files:
        if document_id not in waiting or source_path is None or place is None:
            continue
        grant = UploadGrant(
            tenant_id=tenant_id,
            document_id=document_id,
            content_type=_content_type(found.path),
            max_bytes=max_bytes,
            expires_at=expires,
        )
        try:
            with place.open(tenant_id, source_path, found) as body:
                land_upload(write_factory, storage, client, grant=grant, body=body)
        except TooLarge:
            _fail(
                write_factory,
                client,
                tenant_id,
                document_id,
                FILE_TOO_LARGE,
                f"the file is larger than the limit of {max_bytes} bytes",
            )
        except SourceChanged:
            _not_stored(
                write_factory,
                client,
                tenant_id,
                (run.source_id, found, document_id),
                SOURCE_CHANGED,
                "the file changed after it was listed; the next poll takes it again",
            )
        except OSError:
            _not_stored(
                write_factory,
                client,
                tenant_id,
                (run.source_id, found, document_id),
                NOT_UPLOADED,
                "the file was no longer in the source",
            )
    with write_factory() as session, session.begin():
        triggers.request_start(
            session, client, TenantContext(recorded_by_flow(tenant_id)), batch_id=batch_id
        )


def _found(file: SourceFile) -> Found:
    """The file as the scan that claimed it found it (size -1: not recorded, before 0028)."""
    size = file.size if file.size is not None else -1
    return Found(file.path, size, file.sha256, file.mtime_ns)


def _not_stored(
    write_factory: sessionmaker[Session],
    client: DBOSClient,
    tenant_id: str,
    taken: tuple[str, Found, str],
    code: str,
    reason: str,
) -> None:
    """The file (`taken`: source id, file, document id) could not be read as the scan found it:
    gone, swapped for a link or another file, or rewritten before or while it was read. Its
    document fails with `code` and its claim is released, so the next poll takes what the path
    holds then (whole, once it is still)."""
    source_id, found, document_id = taken
    with write_factory() as session, session.begin():
        fail_document(
            session, client, tenant_id=tenant_id, document_id=document_id, code=code, reason=reason
        )
        repo = SourceRepository(session, recorded_by_flow(tenant_id))
        repo.release(source_id, path=found.path, sha256=found.sha256)
    log.warning(
        "source.file_not_stored",
        tenant_id=tenant_id,
        source_id=source_id,
        document_id=document_id,
        code=code,
    )


def _fail(
    write_factory: sessionmaker[Session],
    client: DBOSClient,
    tenant_id: str,
    document_id: str,
    code: str,
    reason: str,
) -> None:
    with write_factory() as session, session.begin():
        fail_document(
            session, client, tenant_id=tenant_id, document_id=document_id, code=code, reason=reason
        )


def settle(
    write_factory: sessionmaker[Session], *, place: Place | None, tenant_id: str, source_id: str
) -> int:
    """Move the source's taken files whose documents are terminal to `processed/` or
    `failed/` (sources with `move_after` only); how many were moved."""
    with write_factory() as session:
        repo = SourceRepository(session, recorded_by_flow(tenant_id))
        source = repo.get(source_id)
        if source is None or not source.move_after:
            return 0
        path = source.path
        docs = DocumentRepository(session, tenant_id)
        moves: list[tuple[str, str, str]] = []
        for file in repo.unmoved_files(source_id, SETTLE_PAGE):
            document = docs.get(file.document_id) if file.document_id else None
            to = _MOVED_BY_STATUS.get(document.status) if document is not None else FAILED
            if to is not None:
                moves.append((file.path, file.sha256, to))
    if not moves or place is None:
        return 0
    moved = 0
    for rel, sha256, to in moves:
        try:
            place.move(tenant_id, path, rel, to)
        except OSError as exc:
            log.warning("source.move_failed", source_id=source_id, path=rel, error=str(exc))
            continue
        with write_factory() as session, session.begin():
            repo = SourceRepository(session, recorded_by_flow(tenant_id))
            repo.mark_moved(source_id, path=rel, sha256=sha256, place=to)
        moved += 1
    return moved
