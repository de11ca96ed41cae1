"""What the durable steps of a process use, and what a flows module declares to be launched.

A leaf: it imports no domain package, so any flows or steps module may import it.

- `services()`: the settings, database, storage, OCR engine and DBOS client of the process,
  installed by `docflow.runtime.launch.launch`.
- Queue names other packages enqueue on, and the concurrency of documents and OCR.
- `Flows`, `Queue`: what a flows module needs launched (its queues, from the settings, and its
  schedules); the composition roots hand every module's `Flows` to the launcher.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dbos import DBOSClient, ScheduleInput
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow import __version__
from docflow.config import Settings
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.base import OcrEngine
from docflow.storage.base import Storage

# Recovery only picks up workflows of the same application version: every process of one
# deployment must agree on it, so it is the package version, not DBOS's hash of the source.
APP_VERSION = f"docflow-{__version__}"
# One document flow per document (batches enqueue them there).
DOCUMENTS_QUEUE = "documents"
# The batch flows, and the scheduled workflows of every package.
BATCHES_QUEUE = "batches"
DOCUMENTS_PER_CPU = 4


@dataclass(frozen=True)
class Queue:
    """A DBOS queue to create or update at launch (None: no such limit)."""

    name: str
    polling_interval_sec: float
    global_concurrency: int | None = None
    worker_concurrency: int | None = None
    partition_concurrency: int | None = None
    partition_worker_concurrency: int | None = None


@dataclass(frozen=True)
class Flows:
    """What a flows module needs launched: its queues and its schedules, each read from the
    settings at launch (`schedules` only where the process installs them); `on_launch`, called
    with the process's services before DBOS launches, and `on_shutdown`, once DBOS has stopped
    (a module that keeps something of the services forgets it there)."""

    queues: Callable[[Settings], Sequence[Queue]] = lambda _settings: ()
    schedules: Callable[[Settings], Sequence[ScheduleInput]] = lambda _settings: ()
    on_launch: Callable[[Services], None] | None = None
    on_shutdown: Callable[[], None] | None = None


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
    _second_ocr: OcrEngine | None = None

    def ocr(self) -> OcrEngine:
        """The process's OCR engine, loaded on first use and kept (it pools Tesseract APIs,
        at most `ocr_concurrency` of them busy at once)."""
        with self._ocr_lock:
            if self._ocr is None:
                from docflow.extraction.ocr import default_engine

                self._ocr = default_engine(max_engines=ocr_concurrency(self.settings))
            return self._ocr

    def second_ocr(self) -> OcrEngine:
        """The process's second OCR tier (PP-OCR), loaded on first use and kept: one model set
        shared by every thread, at most `ppocr_concurrency` pages at once."""
        with self._ocr_lock:
            if self._second_ocr is None:
                from docflow.extraction.ocr import ppocr_engine

                settings = self.settings
                self._second_ocr = ppocr_engine(
                    det_side=settings.ppocr_det_side,
                    threads=settings.ppocr_threads,
                    max_engines=settings.ppocr_concurrency or os.cpu_count() or 1,
                )
            return self._second_ocr

    def write_session(self) -> Session:
        """A session whose transactions take the write lock at BEGIN on SQLite (see
        `db.make_write_session_factory`): read-then-write steps wait instead of failing."""
        return self.write_factory()


_services: Services | None = None


def services() -> Services:
    """The services of the launched runtime; RuntimeError when `launch` has not run."""
    if _services is None:
        raise RuntimeError("the docflow runtime is not launched")
    return _services


def launched() -> bool:
    """Whether services are installed in this process."""
    return _services is not None


def install(current: Services) -> None:
    """Make `current` the services of this process (the launcher's part); RuntimeError when
    services are installed already."""
    global _services
    if _services is not None:
        raise RuntimeError("the docflow runtime is already launched in this process")
    _services = current


def uninstall() -> Services | None:
    """Forget the services (the launcher's part, once DBOS has stopped); the services there
    were, if any."""
    global _services
    current, _services = _services, None
    return current


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
