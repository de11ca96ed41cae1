"""Taking, checking and restoring a backup of a whole installation (database and stored files).

`create` snapshots the database first (SQLite's online backup, or `pg_dump` of an exported
snapshot), reads the storage keys that snapshot references in the same snapshot, and copies
those objects: files written after the snapshot are not in it, and nothing it references is
left out unless it was already gone from storage (listed as `missing`). The manifest is written
last, so a backup without one is known to be unfinished. `restore` brings an empty installation
(a new SQLite home, or an empty PostgreSQL database) to the backup's state, every checksum
checked, then upgrades its schema to this version's (a backup of an older version restores).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy.engine import make_url

from docflow import __version__, db
from docflow.backup import repository
from docflow.backup.targets import BackupTarget, chunks_of, copy_file, fetch_file
from docflow.config import Settings
from docflow.documents.keys import is_words_key
from docflow.kit.clock import utcnow
from docflow.storage.base import ObjectNotFound, Storage
from docflow.system_db import migrate_system_database

FORMAT = 1
MANIFEST = "manifest.json"
SQLITE_PART = "database.sqlite"
POSTGRES_PART = "database.pgdump"
FILES = "files"


class BackupError(RuntimeError):
    """The backup cannot be taken, read or restored as asked; the message says why."""


@dataclass(frozen=True)
class Part:
    """One stored part of a backup: its name (or storage key), size and SHA-256."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    format: int
    created_at: str
    docflow_version: str
    database_kind: str
    database: Part
    files: list[Part]
    missing: list[str] = field(default_factory=list)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=2).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Manifest:
        data = json.loads(raw)
        if data.get("format") != FORMAT:
            raise BackupError(f"unknown backup format {data.get('format')!r} (this reads {FORMAT})")
        return cls(
            format=data["format"],
            created_at=data["created_at"],
            docflow_version=data["docflow_version"],
            database_kind=data["database_kind"],
            database=Part(**data["database"]),
            files=[Part(**f) for f in data["files"]],
            missing=list(data.get("missing", [])),
        )


def database_kind(settings: Settings) -> str:
    return make_url(settings.resolved_database_url()).get_backend_name()


def create(settings: Settings, storage: Storage, target: BackupTarget) -> Manifest:
    """Back the installation of `settings` up to `target` (see the module docstring)."""
    if target.exists(MANIFEST):
        raise BackupError("the target already holds a backup: choose a new folder or prefix")
    kind = database_kind(settings)
    with tempfile.TemporaryDirectory(prefix="docflow-backup-") as scratch:
        if kind == "sqlite":
            local = Path(scratch) / SQLITE_PART
            path = make_url(settings.resolved_database_url()).database or ""
            if not Path(path).is_file():
                raise BackupError(f"no SQLite database at {path}")
            keys = repository.sqlite_snapshot(Path(path), local)
        else:
            local = Path(scratch) / POSTGRES_PART
            owner_url = settings.resolved_migration_database_url()
            with repository.postgres_snapshot(owner_url) as (snapshot, keys):
                repository.pg_dump(owner_url, snapshot, local)
        size, digest = copy_file(local, target, local.name)
    files, missing = _copy_files(storage, target, keys)
    manifest = Manifest(
        format=FORMAT,
        created_at=utcnow().isoformat(),
        docflow_version=__version__,
        database_kind=kind,
        database=Part(local.name, size, digest),
        files=files,
        missing=missing,
    )
    target.write(MANIFEST, iter([manifest.to_json()]))
    return manifest


def _copy_files(
    storage: Storage, target: BackupTarget, keys: list[str]
) -> tuple[list[Part], list[str]]:
    files: list[Part] = []
    missing: list[str] = []
    for key in keys:
        try:
            with storage.open_read(key) as stream:
                size, digest = target.write(f"{FILES}/{key}", chunks_of(stream))
        except ObjectNotFound:
            if not is_words_key(key):  # words not kept are no lost object
                missing.append(key)  # deleted before the copy reached it (its batch was deleted)
            continue
        files.append(Part(key, size, digest))
    return files, missing


def read_manifest(target: BackupTarget) -> Manifest:
    try:
        with target.open(MANIFEST) as stream:
            return Manifest.from_json(stream.read())
    except FileNotFoundError as exc:
        raise BackupError("no manifest.json: not a backup, or one that did not finish") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise BackupError(f"manifest.json is not readable: {type(exc).__name__}") from exc


@dataclass(frozen=True)
class Verification:
    manifest: Manifest
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(target: BackupTarget) -> Verification:
    """Check every part of the backup against its size and checksum, and that the database part
    is a sound SQLite file or a readable dump."""
    manifest = read_manifest(target)
    problems = list(_mismatches(target, manifest))
    with tempfile.TemporaryDirectory(prefix="docflow-verify-") as scratch:
        local = Path(scratch) / manifest.database.name
        try:
            fetch_file(target, manifest.database.name, local)
            if manifest.database_kind == "sqlite":
                result = repository.sqlite_integrity(local)
                if result != "ok":
                    problems.append(f"{manifest.database.name}: integrity check says {result}")
            else:
                repository.pg_list(local)
        except FileNotFoundError:
            pass  # already reported as missing
        except (RuntimeError, OSError) as exc:
            problems.append(f"{manifest.database.name}: {exc}")
    return Verification(manifest, problems)


def _mismatches(target: BackupTarget, manifest: Manifest) -> Iterator[str]:
    parts = [(manifest.database.name, manifest.database)]
    parts += [(f"{FILES}/{f.name}", f) for f in manifest.files]
    for name, part in parts:
        try:
            size, digest = _digest(target, name)
        except FileNotFoundError:
            yield f"{name}: missing"
            continue
        if (size, digest) != (part.size, part.sha256):
            yield (
                f"{name}: {size} bytes, sha256 {digest[:12]}…; "
                f"the manifest says {part.size} bytes, {part.sha256[:12]}…"
            )


def _digest(target: BackupTarget, name: str) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with target.open(name) as stream:
        for chunk in chunks_of(stream):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def restore(settings: Settings, storage: Storage, source: BackupTarget) -> Manifest:
    """Restore the backup at `source` into the empty installation of `settings` (its database
    and storage), after checking every part; then migrate it to this version's schema."""
    checked = verify(source)
    if not checked.ok:
        raise BackupError("the backup does not verify: " + "; ".join(checked.problems[:5]))
    manifest = checked.manifest
    kind = database_kind(settings)
    if kind != manifest.database_kind:
        raise BackupError(f"a {manifest.database_kind} backup cannot restore into {kind}")
    if kind == "sqlite":
        _restore_sqlite(settings, source, manifest)
    else:
        _restore_postgres(settings, source, manifest)
    for part in manifest.files:
        with source.open(f"{FILES}/{part.name}") as stream:
            stored = storage.write_stream(part.name, chunks_of(stream), max_bytes=part.size)
        if stored.sha256 != part.sha256:
            raise BackupError(f"{part.name}: restored bytes differ from the backup's")
    return manifest


def _restore_sqlite(settings: Settings, source: BackupTarget, manifest: Manifest) -> None:
    path = Path(make_url(settings.resolved_database_url()).database or "")
    if path.exists():
        raise BackupError(f"{path} exists: restore into a new DOCFLOW_HOME (or move it away)")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".restoring")
    fetch_file(source, manifest.database.name, partial)
    partial.replace(path)
    db.run_migrations(settings.resolved_migration_database_url())


def _restore_postgres(settings: Settings, source: BackupTarget, manifest: Manifest) -> None:
    owner_url = settings.resolved_migration_database_url()
    if not repository.postgres_is_empty(owner_url):
        raise BackupError("the PostgreSQL database is not empty: restore into a new database")
    app = make_url(settings.resolved_database_url())
    system = make_url(settings.resolved_system_database_url())
    # The dump's grants name both roles: they must exist before it is restored.
    db.ensure_app_role(owner_url, app.username or "", password=app.password)
    db.ensure_system_role(owner_url, system.username or "", password=system.password)
    with tempfile.TemporaryDirectory(prefix="docflow-restore-") as scratch:
        local = Path(scratch) / manifest.database.name
        fetch_file(source, manifest.database.name, local)
        repository.pg_restore(owner_url, local)
    db.run_migrations(owner_url, app_role=app.username or "")
    migrate_system_database(settings, app_role=app.username)
