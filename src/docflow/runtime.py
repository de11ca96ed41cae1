"""DBOS configuration and lifecycle: the durable runtime every process of docflow launches.

One DBOS instance per process. Its system tables live beside the application's data so that a
trigger can enqueue a workflow inside the application's own transaction
(`DBOSClient.enqueue_in_transaction`): on SQLite in the same file as the application tables, on
PostgreSQL in schema `dbos` of the application database, where DBOS connects as its own role. On
PostgreSQL the owner role creates and migrates that schema out of band (`migrate_system_database`:
everything to the system role, only enqueueing to the application role) and processes launch
with `run_migrations` off; on SQLite DBOS migrates the file at launch (SQLite mode is one process
only). DBOS stores JSON (`system_db.SERIALIZER`) and never unpickles (`refuse_pickle`).

Queues (rows in the system database, registered after launch):
- `documents`: one document flow per document, partitioned by tenant (so one tenant's big batch
  cannot starve another's), at most `settings.max_concurrency` running across all executors and
  `worker_concurrency(settings)` (default: four per CPU) on one executor, of which one tenant
  holds at most three quarters; OCR inside them is bounded by `ocr_concurrency(settings)`.
- `batches`: the batch flows. A batch flow waits for its documents, so it never takes a slot of the
  `documents` queue: a parent holding a slot its children need could deadlock.

The step bodies reach the database, storage and OCR engine through `services()`, set by `launch`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from dbos import DBOS, DBOSClient, DBOSConfig
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow import __version__, db
from docflow.config import Settings
from docflow.documents.storage import Storage, open_storage
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.base import OcrEngine
from docflow.system_db import (
    SERIALIZER,
    SYSTEM_SCHEMA,
    enable_wal,
    is_sqlite,
    migrate_system_database,
    refuse_pickle,
    sqlite_system_engine,
    system_database_url,
)

__all__ = [
    "APP_NAME",
    "APP_VERSION",
    "BATCHES_QUEUE",
    "DOCUMENTS_QUEUE",
    "DUE_BATCHES_SCHEDULE",
    "EVENTS_PUBLISH_SCHEDULE",
    "EVENTS_SWEEP_SCHEDULE",
    "SYSTEM_SCHEMA",
    "Services",
    "dbos_config",
    "engine_limits",
    "install_schedules",
    "is_sqlite",
    "launch",
    "migrate_system_database",
    "ocr_concurrency",
    "open_client",
    "register_queues",
    "services",
    "shutdown",
    "stopped",
    "system_database_url",
    "wait_unless_stopped",
    "worker_concurrency",
]

log = structlog.get_logger(__name__)

APP_NAME = "docflow"
# Recovery only picks up workflows of the same application version: every process of one
# deployment must agree on it, so it is the package version, not DBOS's hash of the source.
APP_VERSION = f"docflow-{__version__}"
DOCUMENTS_QUEUE = "documents"
BATCHES_QUEUE = "batches"
DUE_BATCHES_SCHEDULE = "due-batches"
DUE_BATCHES_CRON = "* * * * *"
EVENTS_PUBLISH_SCHEDULE = "events-publish"
EVENTS_SWEEP_SCHEDULE = "events-sweep"


@dataclass
class Services:
    """What the workflow steps of this process use: settings, database, storage, OCR, client."""

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    storage: Storage
    client: DBOSClient
    limits: EngineLimits
    executor_id: str
    write_factory: sessionmaker[Session]
    _ocr: OcrEngine | None = None
    _ocr_lock: threading.Lock = field(default_factory=threading.Lock)

    def ocr(self) -> OcrEngine:
        """The process's OCR engine, loaded on first use and kept (it pools Tesseract APIs,
        at most `ocr_concurrency` of them busy at once)."""
        with self._ocr_lock:
            if self._ocr is None:
                from docflow.extraction.ocr import default_engine

                self._ocr = default_engine(max_engines=ocr_concurrency(self.settings))
            return self._ocr

    def write_session(self) -> Session:
        """A session whose transactions take the write lock at BEGIN on SQLite (see
        `db.make_write_session_factory`): read-then-write steps wait instead of failing."""
        return self.write_factory()


_services: Services | None = None
_system_engine: Engine | None = None
# Set once DBOS has stopped in this process: a step still running can no longer record its
# outcome, and one that waits (such as `batch.wait`) must return so the process can exit; its
# workflow resumes from its last recorded step when an executor launches again.
_stopped = threading.Event()


def stopped() -> bool:
    """Whether DBOS has stopped in this process (see `shutdown`)."""
    return _stopped.is_set()


def wait_unless_stopped(seconds: float) -> bool:
    """Sleep `seconds`, or less when DBOS stops meanwhile; True when it has stopped."""
    return _stopped.wait(seconds)


def services() -> Services:
    """The services of the launched runtime; RuntimeError when `launch` has not run."""
    if _services is None:
        raise RuntimeError("the docflow runtime is not launched")
    return _services


def dbos_config(settings: Settings, *, executor_id: str) -> DBOSConfig:
    """The DBOS configuration of one docflow process with a stable `executor_id`."""
    if not executor_id.strip():
        raise ValueError("an executor id is required")
    sqlite = is_sqlite(settings)
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": system_database_url(settings),
        "application_version": APP_VERSION,
        "executor_id": executor_id,
        "log_level": settings.dbos_log_level,
        "notification_listener_polling_interval_sec": settings.queue_polling_seconds,
        "run_migrations": sqlite,
        "serializer": SERIALIZER,
    }
    if sqlite:
        config["system_database_engine"] = sqlite_system_engine(config["system_database_url"])
    else:
        config["dbos_system_schema"] = SYSTEM_SCHEMA
    return config


DOCUMENTS_PER_CPU = 4


def worker_concurrency(settings: Settings) -> int:
    """Documents one executor runs at once: the setting, or four per CPU; never more than
    `max_concurrency`."""
    wanted = settings.worker_concurrency or DOCUMENTS_PER_CPU * (os.cpu_count() or 1)
    return min(wanted, settings.max_concurrency)


def tenant_slots(slots: int) -> int:
    """How many of a worker's `slots` one tenant may hold: all but a quarter (at least one
    kept free for the others when there are two slots or more)."""
    return slots - max(1, slots // 4) if slots > 1 else slots


def ocr_concurrency(settings: Settings) -> int:
    """OCR engines one executor runs at once: the setting, or the CPU count."""
    return settings.ocr_concurrency or os.cpu_count() or 1


def register_queues(settings: Settings) -> None:
    """Create or update the queues (their limits are re-read on every poll)."""
    slots = worker_concurrency(settings)
    DBOS.register_queue(
        DOCUMENTS_QUEUE,
        global_concurrency=settings.max_concurrency,
        worker_concurrency=slots,
        # Partitioned by tenant: partitions are visited in random order on each poll, so a
        # tenant's new work gets a slot as soon as one frees, whatever another tenant queued;
        # and one tenant never holds every slot of a worker, so another's first documents start
        # on the next poll instead of waiting for the big batch's documents to finish.
        partition_concurrency=settings.max_concurrency,
        partition_worker_concurrency=tenant_slots(slots),
        polling_interval_sec=settings.queue_polling_seconds,
        on_conflict="always_update",
    )
    DBOS.register_queue(
        BATCHES_QUEUE,
        polling_interval_sec=settings.queue_polling_seconds,
        on_conflict="always_update",
    )
    _register_event_queues(settings)


def _register_event_queues(settings: Settings) -> None:
    from docflow.events.consumers import consumers
    from docflow.events.outbox import PUBLISH_QUEUE
    from docflow.webhooks.jobs import WEBHOOKS_QUEUE

    # One publisher at a time, so events are handed to consumers in the order they happened.
    DBOS.register_queue(
        PUBLISH_QUEUE,
        global_concurrency=1,
        polling_interval_sec=settings.background_polling_seconds,
        on_conflict="always_update",
    )
    for entry in consumers():
        DBOS.register_queue(
            entry.queue,
            worker_concurrency=entry.concurrency,
            polling_interval_sec=settings.background_polling_seconds,
            on_conflict="always_update",
        )
    DBOS.register_queue(
        WEBHOOKS_QUEUE,
        polling_interval_sec=settings.background_polling_seconds,
        on_conflict="always_update",
    )


def _import_flows() -> None:
    # Every process must register every workflow before launch: a dequeued workflow whose name
    # is unknown here would stay claimed by this executor.
    from docflow.batches import flows as _batch_flows  # noqa: F401
    from docflow.documents import flows as _document_flows  # noqa: F401
    from docflow.events import flows as _event_flows  # noqa: F401
    from docflow.events.consumers import load_consumers
    from docflow.idempotency import flows as _idempotency_flows  # noqa: F401

    load_consumers()
    from docflow.reconciler import flows as _reconciler_flows  # noqa: F401
    from docflow.webhooks import consumer as _webhook_consumer  # noqa: F401
    from docflow.webhooks import flows as _webhook_flows  # noqa: F401


def launch(
    settings: Settings,
    *,
    executor_id: str,
    engine: Engine,
    storage: Storage | None = None,
    ocr: OcrEngine | None = None,
    listen_queues: Sequence[str] | None = None,
    schedules: bool = True,
) -> None:
    """Launch DBOS in this process and make `services()` available to the steps.

    `listen_queues` limits which queues this process dequeues from (None: all; `()` for a process
    that only serves the API; DBOS always listens to its internal queue). `schedules` installs
    the every-minute due-batches schedule (idempotent per tick, so every process may install it).
    `ocr` defaults to Tesseract in process, loaded on first use. Raises if already launched.
    """
    global _services, _system_engine
    if _services is not None:
        raise RuntimeError("the docflow runtime is already launched in this process")
    _import_flows()
    _stopped.clear()
    from docflow.events.outbox import publisher_started

    publisher_started()  # a wake-up enqueued before an earlier shutdown is not waiting any more
    if is_sqlite(settings):
        enable_wal(settings)
    refuse_pickle()
    config = dbos_config(settings, executor_id=executor_id)
    _system_engine = config.get("system_database_engine")
    DBOS(config=config)
    if listen_queues is not None:
        DBOS.listen_queues(list(listen_queues))
    _services = _make_services(settings, executor_id, engine, storage, ocr)
    try:
        DBOS.launch()
        register_queues(settings)
        if schedules:
            install_schedules()
    except BaseException:
        shutdown()
        raise
    log.info("runtime.launched", executor_id=executor_id, version=APP_VERSION)


def _make_services(
    settings: Settings,
    executor_id: str,
    engine: Engine,
    storage: Storage | None,
    ocr: OcrEngine | None,
) -> Services:
    return Services(
        settings=settings,
        engine=engine,
        session_factory=db.make_session_factory(engine),
        storage=storage if storage is not None else open_storage(settings.resolved_storage_url()),
        client=open_client(settings),
        limits=engine_limits(settings),
        executor_id=executor_id,
        write_factory=db.make_write_session_factory(engine),
        _ocr=ocr,
    )


def open_client(settings: Settings, *, retry_connection_errors: bool = True) -> DBOSClient:
    """A DBOS client on the system database (enqueue, list, inspect) without launching DBOS;
    the caller destroys it. Without `retry_connection_errors` an unreachable database raises
    instead of being waited for (a readiness check must answer)."""
    refuse_pickle()
    extra: dict[str, Any] = {}
    if not is_sqlite(settings):
        extra["dbos_system_schema"] = SYSTEM_SCHEMA
    return DBOSClient(
        system_database_url=system_database_url(settings),
        application_name=APP_NAME,
        lazy=True,
        serializer=SERIALIZER,
        retry_connection_errors=retry_connection_errors,
        **extra,
    )


def engine_limits(settings: Settings) -> EngineLimits:
    return EngineLimits(
        max_pages=settings.max_pages,
        max_pixels=settings.max_pixels,
        ocr_seconds_per_page=settings.ocr_seconds_per_page,
        dpi=settings.ocr_dpi,
    )


def install_schedules() -> None:
    """Create or replace the schedules: due batches (every minute), the events publisher
    (every `events_publish_interval_seconds`), the events retention sweep and the idempotency
    keys' purge (hourly), the reconciler of failed workflows (every
    `reconcile_interval_seconds`)."""
    from docflow.batches.flows import due_batches_tick
    from docflow.events.flows import publish_tick, sweep_tick
    from docflow.events.outbox import PUBLISH_QUEUE
    from docflow.idempotency.flows import purge_schedule
    from docflow.reconciler.flows import reconcile_schedule

    settings = services().settings
    interval = settings.events_publish_interval_seconds
    DBOS.apply_schedules(
        [
            {
                "schedule_name": DUE_BATCHES_SCHEDULE,
                "workflow_fn": due_batches_tick,
                "schedule": DUE_BATCHES_CRON,
                "context": None,
                "queue_name": BATCHES_QUEUE,
            },
            {
                "schedule_name": EVENTS_PUBLISH_SCHEDULE,
                "workflow_fn": publish_tick,
                "schedule": f"*/{interval} * * * * *",
                "context": None,
                "queue_name": PUBLISH_QUEUE,
            },
            {
                "schedule_name": EVENTS_SWEEP_SCHEDULE,
                "workflow_fn": sweep_tick,
                "schedule": "17 * * * *",
                "context": None,
                "queue_name": BATCHES_QUEUE,
            },
            purge_schedule(
                retention_hours=settings.idempotency_retention_hours, queue_name=BATCHES_QUEUE
            ),
            reconcile_schedule(
                interval_seconds=settings.reconcile_interval_seconds,
                max_rewinds=settings.reconcile_max_rewinds,
                queue_name=BATCHES_QUEUE,
            ),
        ]
    )


def shutdown(*, workflow_completion_timeout_sec: int = 0) -> None:
    """Stop DBOS in this process (unfinished workflows resume when this executor launches
    again, or when a survivor recovers them) and forget the services. Safe to call twice."""
    global _services, _system_engine
    # DBOS first: a step still running must find its services until DBOS has stopped (without
    # them it would end its document FAILED instead of being resumed after the restart).
    DBOS.destroy(workflow_completion_timeout_sec=workflow_completion_timeout_sec)
    _stopped.set()
    current, _services = _services, None
    engine, _system_engine = _system_engine, None
    if current is not None:
        current.client.destroy()
    if engine is not None:
        engine.dispose()
    log.info("runtime.shut_down")
