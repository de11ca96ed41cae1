"""Tenants' data keys: the keyring the sealed storage asks, rotation, re-wrapping, and sealing
the files stored before encryption (`seal_files`).

A tenant's first data key is made on the first write that needs it (`active_key`): 32 random
bytes, wrapped by the current KEK and stored as version 1. Of two processes making it at once,
one commits and the other finds that key (the primary key and the one-active index refuse a
second). Unwrapped keys are kept in memory for `CACHE_SECONDS`, so a rotation made by another
process reaches this one's writes within that time (files keep naming the version that sealed
them, so reads are never affected).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.config import Settings
from docflow.documents.keys import is_words_key
from docflow.encryption.kek import KekSet, open_kek
from docflow.encryption.models import ACTIVE, DataKeyRow
from docflow.encryption.repository import DataKeyRepository, StoredObjectRepository
from docflow.kit.clock import utcnow
from docflow.storage.base import ObjectNotFound, Storage
from docflow.storage.open import open_storage
from docflow.storage.sealed import DataKey, SealBroken, SealedStorage

log = structlog.get_logger(__name__)

CACHE_SECONDS = 300.0
KEY_BYTES = 32


class DatabaseKeyring:
    """The `Keyring` of the sealed storage: data keys from the `data_keys` table, unwrapped by
    the KEKs of `keks`. Reads take plain transactions; only a first key takes a write one."""

    def __init__(
        self,
        read_factory: sessionmaker[Session],
        write_factory: sessionmaker[Session],
        keks: KekSet,
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read_factory
        self._write = write_factory
        self.keks = keks
        self._ttl = cache_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, int | None], tuple[float, DataKey]] = {}

    def active_key(self, tenant_id: str) -> DataKey:
        """The key new writes of `tenant_id` are sealed with, made on first use."""
        cached = self._cached(tenant_id, None)
        if cached is not None:
            return cached
        with self._read() as session:
            row = DataKeyRepository(session, tenant_id).active()
        if row is None:
            row = self._create_first(tenant_id)
        return self._keep(tenant_id, row, active=True)

    def key(self, tenant_id: str, version: int) -> DataKey:
        """Version `version` of the tenant's key; `SealBroken` when the tenant has none (the
        object was not sealed for this tenant)."""
        cached = self._cached(tenant_id, version)
        if cached is not None:
            return cached
        with self._read() as session:
            row = DataKeyRepository(session, tenant_id).get(version)
        if row is None:
            raise SealBroken("the stored object was not sealed under a key of its tenant")
        return self._keep(tenant_id, row, active=False)

    def forget(self, tenant_id: str | None = None) -> None:
        """Drop cached keys (of one tenant, or all): after a rotation in this process."""
        with self._lock:
            for entry in [k for k in self._cache if tenant_id in (None, k[0])]:
                del self._cache[entry]

    def _cached(self, tenant_id: str, version: int | None) -> DataKey | None:
        with self._lock:
            entry = self._cache.get((tenant_id, version))
        if entry is None or self._clock() >= entry[0]:
            return None
        return entry[1]

    def _keep(self, tenant_id: str, row: DataKeyRow, *, active: bool) -> DataKey:
        key = DataKey(row.version, self.keks.find(row.kek_id).unwrap(tenant_id, row.wrapped_key))
        expires = self._clock() + self._ttl
        with self._lock:
            self._cache[(tenant_id, row.version)] = (expires, key)
            if active:
                self._cache[(tenant_id, None)] = (expires, key)
        return key

    def _create_first(self, tenant_id: str) -> DataKeyRow:
        try:
            with self._write() as session, session.begin():
                repository = DataKeyRepository(session, tenant_id)
                row = repository.active()
                if row is None:
                    row = _new_row(self.keks, tenant_id, version=1)
                    repository.add(row)
                    log.info("encryption.data_key_created", tenant_id=tenant_id, version=1)
                return row
        except IntegrityError:  # another process made it first
            with self._read() as session:
                found = DataKeyRepository(session, tenant_id).active()
            if found is None:
                raise
            return found


def _new_row(keks: KekSet, tenant_id: str, *, version: int) -> DataKeyRow:
    wrapped = keks.current.wrap(tenant_id, os.urandom(KEY_BYTES))
    return DataKeyRow(
        tenant_id=tenant_id,
        version=version,
        wrapped_key=wrapped,
        kek_id=keks.current.kek_id,
        state=ACTIVE,
        created_at=utcnow(),
    )


def rotate(session: Session, keks: KekSet, *, tenant_id: str) -> int:
    """Make a new version of the tenant's data key for its new writes; the previous version
    is retired (it still opens the files it sealed). Returns the new version."""
    repository = DataKeyRepository(session, tenant_id)
    version = repository.latest_version() + 1
    repository.retire_active()
    repository.add(_new_row(keks, tenant_id, version=version))
    log.info("encryption.data_key_rotated", tenant_id=tenant_id, version=version)
    return version


def rewrap(session: Session, keks: KekSet, *, tenant_id: str) -> int:
    """Wrap every data key of the tenant not under the current KEK again under it (no file is
    read or written: files are sealed by the data keys, which do not change). Returns how many
    were re-wrapped."""
    repository = DataKeyRepository(session, tenant_id)
    moved = 0
    for row in repository.all():
        if row.kek_id == keks.current.kek_id:
            continue
        key = keks.find(row.kek_id).unwrap(tenant_id, row.wrapped_key)
        repository.rewrap(
            row.version,
            wrapped_key=keks.current.wrap(tenant_id, key),
            kek_id=keks.current.kek_id,
            now=utcnow(),
        )
        moved += 1
    if moved:
        log.info("encryption.data_keys_rewrapped", tenant_id=tenant_id, count=moved)
    return moved


@dataclass
class SealCounts:
    """What `seal_files` did (or, on a dry run, would do) to a tenant's stored objects."""

    tenant_id: str
    sealed: int = 0
    already_sealed: int = 0
    skipped: int = 0  # recorded, but no longer stored (deleted with its batch meanwhile)


def stored_keys(session: Session, *, tenant_id: str) -> list[str]:
    """The keys of every object the tenant's documents hold (see `StoredObjectRepository`)."""
    return StoredObjectRepository(session, tenant_id).keys()


def seal_files(
    storage: SealedStorage, keys: list[str], *, tenant_id: str, dry_run: bool = False
) -> SealCounts:
    """Seal each of the tenant's objects `keys` (`stored_keys`) that is stored unsealed
    (written before encryption was on) under the tenant's active data key, one at a time and
    streamed (`SealedStorage.seal_in_place`: each is replaced whole, so a crash leaves every
    object either as it was or sealed, and a second run goes on where the first stopped).
    Sealed objects are left untouched. The sizes and SHA-256 digests the database records are
    of the plaintext, so they stay true. With `dry_run`, only counts."""
    counts = SealCounts(tenant_id)
    for key in keys:
        try:
            if storage.is_sealed(key):
                counts.already_sealed += 1
            elif dry_run or storage.seal_in_place(key):
                counts.sealed += 1
            else:  # sealed between the two reads
                counts.already_sealed += 1
        except ObjectNotFound:
            if not is_words_key(key):  # words not kept are no lost object
                counts.skipped += 1
    if counts.sealed and not dry_run:
        log.info("encryption.files_sealed", tenant_id=tenant_id, count=counts.sealed)
    return counts


@dataclass(frozen=True)
class KeyVersion:
    """What `docflow keys list` shows of one data key version (never the key)."""

    tenant_id: str
    version: int
    state: str
    kek_id: str
    created_at: datetime
    rewrapped_at: datetime | None


def key_versions(session: Session, *, tenant_id: str) -> list[KeyVersion]:
    return [
        KeyVersion(tenant_id, r.version, r.state, r.kek_id, r.created_at, r.rewrapped_at)
        for r in DataKeyRepository(session, tenant_id).all()
    ]


def kek_set(settings: Settings, *, create: bool = True) -> KekSet:
    """The KEKs `settings` name; the default key file under the home is made on first use
    (with `create`, outside production; ValueError when it is missing otherwise)."""
    current = open_kek(settings.resolved_kek_url(), create=create and settings.may_make_kek())
    return KekSet(current, [open_kek(url) for url in settings.previous_kek_urls()])


def open_file_storage(settings: Settings, engine: Engine) -> Storage:
    """The storage of `settings`, sealed per tenant when `DOCFLOW_ENCRYPT_FILES` is on: the
    composition roots' one way to open it (a backup copies `open_storage`'s raw bytes).

    With encryption off, new writes are plaintext, but the files sealed while it was on still
    read decrypted, through a sealed storage that seals nothing; only an installation without
    a KEK (where nothing was ever sealed) gets the raw storage."""
    raw = open_storage(settings.resolved_storage_url())
    try:
        keks = kek_set(settings, create=settings.encrypt_files)
    except ValueError:
        if settings.encrypt_files:
            raise
        return raw
    keyring = DatabaseKeyring(
        db.make_session_factory(engine), db.make_write_session_factory(engine), keks
    )
    return SealedStorage(
        raw,
        keyring,
        refuse_plaintext=settings.encrypt_refuse_plaintext,
        seal_writes=settings.encrypt_files,
    )
