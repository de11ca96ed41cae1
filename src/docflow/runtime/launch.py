"""DBOS configuration and lifecycle: the durable runtime every process of docflow launches.

One DBOS instance per process. Its system tables live beside the application's data so that a
trigger can enqueue a workflow inside the application's own transaction
(`DBOSClient.enqueue_in_transaction`): on SQLite in the same file as the application tables, on
PostgreSQL in schema `dbos` of the application database, where DBOS connects as its own role. On
PostgreSQL the owner role creates and migrates that schema out of band
(`system_db.migrate_system_database`: everything to the system role, only enqueueing to the
application role) and processes launch with `run_migrations` off; on SQLite DBOS migrates the
file at launch (SQLite mode is one process only). DBOS stores JSON (`system_db.SERIALIZER`) and
never unpickles (`refuse_pickle`).

This module imports no flow. A composition root hands `launch` the declarations (`Flows`) of
every flows module (`docflow.bootstrap.flows()`); importing those modules registers their
workflows, which every process must do before it launches (a dequeued workflow whose name is
unknown here would stay claimed by this executor). `launch` then creates their queues (rows in
the system database, their limits re-read on every poll) and installs their schedules. The step
bodies reach the database, storage and OCR engine through `context.services()`, set by `launch`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import structlog
from dbos import DBOS, DBOSClient, DBOSConfig
from dbos._error import DBOSException
from sqlalchemy import Engine

from docflow import db
from docflow.config import Settings
from docflow.encryption.service import open_file_storage
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.base import OcrEngine
from docflow.observability import tracing
from docflow.runtime import context
from docflow.runtime.context import APP_VERSION, Flows, Services
from docflow.storage.base import Storage
from docflow.system_db import (
    SERIALIZER,
    SYSTEM_SCHEMA,
    enable_wal,
    is_sqlite,
    refuse_pickle,
    sqlite_system_engine,
    system_database_url,
)

log = structlog.get_logger(__name__)

APP_NAME = "docflow"
_system_engine: Engine | None = None
# The pool the runtime's DBOS client uses (PostgreSQL), disposed at shutdown.
_client_engine: Engine | None = None
# The flows of the launched runtime, told when it shuts down.
_launched: tuple[Flows, ...] = ()


def connection_name(process: str, role: str = "") -> str:
    """The `application_name` of a process's PostgreSQL connections: `docflow-<process>` for
    the application's, `docflow-<process>-<role>` for DBOS's (`dbos`), its clients' (`client`)
    and the metrics' (`metrics`), so pg_stat_activity shows who holds what."""
    return f"docflow-{process}-{role}" if role else f"docflow-{process}"


def app_engine(settings: Settings, process: str) -> Engine:
    """The application's engine of one process: `db_pool_size` kept connections and up to
    `db_max_overflow` more at a peak."""
    return db.make_engine(
        settings.resolved_database_url(),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        application_name=connection_name(process),
    )


def client_engine(settings: Settings, process: str) -> Engine | None:
    """On PostgreSQL, the system database engine the DBOS clients of one process share
    (`client_db_pool_size` connections, no overflow, pre-pinged); None on SQLite, where each
    client opens the file itself."""
    if is_sqlite(settings):
        return None
    return db.make_engine(
        system_database_url(settings),
        pool_size=settings.client_db_pool_size,
        max_overflow=0,
        application_name=connection_name(process, "client"),
    )


def dbos_config(settings: Settings, *, executor_id: str, process: str = "worker") -> DBOSConfig:
    """The DBOS configuration of one docflow process with a stable `executor_id`: on
    PostgreSQL its own pool holds at most `system_db_pool_size` connections."""
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
        # DBOS's spans of workflows and steps, through the process's tracer provider.
        "enable_otlp": tracing.configure(),
    }
    if sqlite:
        config["system_database_engine"] = sqlite_system_engine(config["system_database_url"])
    else:
        config["dbos_system_schema"] = SYSTEM_SCHEMA
        config["sys_db_pool_size"] = settings.system_db_pool_size
        config["db_engine_kwargs"] = {
            "connect_args": {
                "application_name": connection_name(process, "dbos"),
                "connect_timeout": 10,
            },
            "pool_size": settings.system_db_pool_size,
            "max_overflow": 0,
            "pool_timeout": 30,
            "pool_pre_ping": True,
        }
    return config


def register_queues(settings: Settings, flows: Sequence[Flows]) -> None:
    """Create or update the queues of `flows` (their limits are re-read on every poll)."""
    for declared in flows:
        for queue in declared.queues(settings):
            DBOS.register_queue(
                queue.name,
                global_concurrency=queue.global_concurrency,
                worker_concurrency=queue.worker_concurrency,
                partition_concurrency=queue.partition_concurrency,
                partition_worker_concurrency=queue.partition_worker_concurrency,
                polling_interval_sec=queue.polling_interval_sec,
                on_conflict="always_update",
            )


def install_schedules(settings: Settings, flows: Sequence[Flows]) -> None:
    """Create or replace the schedules of `flows` (each tick has its own workflow id, so
    every process may install them)."""
    DBOS.apply_schedules([s for declared in flows for s in declared.schedules(settings)])


def launch(
    settings: Settings,
    *,
    flows: Sequence[Flows],
    executor_id: str,
    engine: Engine,
    storage: Storage | None = None,
    ocr: OcrEngine | None = None,
    listen_queues: Sequence[str] | None = None,
    schedules: bool = True,
    process: str = "worker",
) -> None:
    """Launch DBOS in this process with the queues of `flows` and make `context.services()`
    available to the steps. The modules declaring `flows` must be imported (so their workflows
    registered) and must be all of them: a process runs whatever any queue hands it.

    `listen_queues` limits which queues this process dequeues from (None: all; `()` for a process
    that only serves the API; DBOS always listens to its internal queue). `schedules` installs
    the schedules of `flows`. `ocr` defaults to Tesseract in process, loaded on first use.
    `process` names the connections (`connection_name`). Raises if already launched.
    """
    global _system_engine, _client_engine, _launched
    if context.launched():
        raise RuntimeError("the docflow runtime is already launched in this process")
    if is_sqlite(settings):
        enable_wal(settings)
    refuse_pickle()
    config = dbos_config(settings, executor_id=executor_id, process=process)
    _system_engine = config.get("system_database_engine")
    DBOS(config=config)
    if listen_queues is not None:
        DBOS.listen_queues(list(listen_queues))
    _client_engine = client_engine(settings, process)
    services = _make_services(settings, executor_id, engine, storage, ocr, _client_engine)
    context.install(services)
    _launched = tuple(flows)
    try:
        for declared in flows:
            if declared.on_launch is not None:
                declared.on_launch(services)
        DBOS.launch()
        register_queues(settings, flows)
        if schedules:
            install_schedules(settings, flows)
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
    clients: Engine | None,
) -> Services:
    return Services(
        settings=settings,
        engine=engine,
        session_factory=db.make_session_factory(engine),
        storage=storage if storage is not None else open_file_storage(settings, engine),
        client=open_client(settings, engine=clients),
        limits=engine_limits(settings),
        executor_id=executor_id,
        write_factory=db.make_write_session_factory(engine),
        _ocr=ocr,
    )


def open_client(
    settings: Settings, *, engine: Engine | None = None, retry_connection_errors: bool = True
) -> DBOSClient:
    """A DBOS client on the system database (enqueue, list, inspect) without launching DBOS;
    the caller destroys it. On `engine` (`client_engine`; the caller disposes it) if given,
    else on a small pool of its own. Without `retry_connection_errors` an unreachable database
    raises instead of being waited for (a readiness check must answer)."""
    refuse_pickle()
    extra: dict[str, Any] = {}
    if not is_sqlite(settings):
        extra["dbos_system_schema"] = SYSTEM_SCHEMA
    if engine is not None:
        extra["system_database_engine"] = engine
    else:
        extra["system_database_url"] = system_database_url(settings)
        extra["system_database_pool_size"] = settings.client_db_pool_size
    return DBOSClient(
        application_name=APP_NAME,
        lazy=True,
        serializer=SERIALIZER,
        retry_connection_errors=retry_connection_errors,
        **extra,
    )


def engine_limits(settings: Settings) -> EngineLimits:
    """The extraction engine's limits from the settings."""
    return EngineLimits(
        max_pages=settings.max_pages,
        max_pixels=settings.max_pixels,
        ocr_seconds_per_page=settings.ocr_seconds_per_page,
        dpi=settings.ocr_dpi,
    )


class _Interrupted(logging.Filter):
    """On the `dbos` logger: a workflow still running when its process shut down fails its next
    checkpoint, and one the queue had just claimed fails to start ("... accessed before DBOS
    was launched"), which DBOS logs as an ERROR (with a traceback for the first). Nothing
    failed: the workflow stays PENDING under this executor and resumes from its last completed
    step when this executor launches again or a survivor recovers it. Such a record becomes one
    info line, `runtime.workflow_interrupted`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            interrupted = _stopped_runtime(error)
        else:
            interrupted = _SHUT_DOWN in record.getMessage()
        if not interrupted:
            return True
        named = _WORKFLOW_NAMED.search(record.getMessage())
        workflow_id = _current_workflow() or (named.group(1) if named else None)
        log.info("runtime.workflow_interrupted", workflow_id=workflow_id)
        return False


# What DBOS says when it is asked for work after it was shut down in this process.
_SHUT_DOWN = "accessed before DBOS was launched"
# "Error executing workflow <id>: ..." (the queue's message for a claimed workflow).
_WORKFLOW_NAMED = re.compile(r"workflow (\S+):")


def _stopped_runtime(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised while handling, is DBOS refusing work after
    it was shut down in this process."""
    seen: BaseException | None = error
    for _ in range(20):  # a bounded walk: chains can loop
        if seen is None:
            return False
        if isinstance(seen, DBOSException) and _SHUT_DOWN in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _current_workflow() -> str | None:
    try:
        return DBOS.workflow_id
    except DBOSException:
        return None


_INTERRUPTED = _Interrupted()


def shutdown(*, workflow_completion_timeout_sec: int = 0) -> None:
    """Stop DBOS in this process (unfinished workflows resume when this executor launches
    again, or when a survivor recovers them) and forget the services. Safe to call twice.
    Workflows still running go on until their next checkpoint, which DBOS refuses: that is
    logged at info level (`_Interrupted`), never as an error."""
    global _system_engine, _client_engine, _launched
    dbos_logger = logging.getLogger("dbos")
    if _INTERRUPTED not in dbos_logger.filters:
        dbos_logger.addFilter(_INTERRUPTED)
    # DBOS first: a step still running must find its services until DBOS has stopped (without
    # them it would end its document FAILED instead of being resumed after the restart).
    DBOS.destroy(workflow_completion_timeout_sec=workflow_completion_timeout_sec)
    for declared in _launched:
        if declared.on_shutdown is not None:
            declared.on_shutdown()
    _launched = ()
    current = context.uninstall()
    engine, _system_engine = _system_engine, None
    if current is not None:
        current.client.destroy()
    for disposed in (engine, _client_engine):
        if disposed is not None:
            disposed.dispose()
    _client_engine = None
    log.info("runtime.shut_down")
