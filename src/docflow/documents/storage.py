"""Object storage for document files and large results, behind one small protocol.

Two implementations: a local folder (`LocalStorage`, the default) and S3-compatible storage
(`docflow.documents.storage_s3.S3Storage`). `open_storage(url)` picks one from the configured URL.

Every key lives under a tenant's namespace, `tenants/{tenant_id}/...`, built with `object_key`;
both implementations refuse any other key, so no caller can read or write outside a tenant or
outside the storage root.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit
from uuid import UUID

import structlog

from docflow.errors import InvalidInput, LimitExceeded, NotFound

log = structlog.get_logger(__name__)

CHUNK_SIZE = 1024 * 1024
MAX_KEY_LENGTH = 1024
TENANTS_PREFIX = "tenants"

# An allowlist rather than a denylist: a segment starting with a letter or digit and made only of
# these characters cannot be "..", absolute, hidden, or carry a backslash or control character.
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=-]*")

ByteSource = Iterable[bytes] | BinaryIO


class Writable(Protocol):
    def write(self, data: bytes, /) -> object: ...


class TooLarge(LimitExceeded):
    """The object is larger than the limit given; nothing was stored."""

    code = "file_too_large"

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            f"the file is larger than the limit of {max_bytes} bytes", max_bytes=max_bytes
        )
        self.max_bytes = max_bytes


class InvalidObjectKey(InvalidInput):
    """A key outside `tenants/{tenant_id}/...` or with a segment that is not allowed."""

    code = "invalid_object_key"


class ObjectNotFound(NotFound):
    """No object is stored under the key."""

    code = "object_not_found"


@dataclass(frozen=True, slots=True)
class StoredObject:
    """What a write stored: the key, the size in bytes and the hex SHA-256 of the content."""

    key: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """What storage knows about a stored object without reading it.

    `sha256` is None when the storage does not record it (the local folder, or an object a client
    uploaded directly to S3 with a presigned URL); `content_type` is None when unknown.
    """

    key: str
    size: int
    sha256: str | None
    last_modified: datetime
    content_type: str | None = None


@runtime_checkable
class Storage(Protocol):
    """Where document files and large results live.

    Keys must be built with `object_key`; every method raises `InvalidObjectKey` for any other key.
    Implementations are safe to use from several threads at once.
    """

    def write_stream(self, key: str, chunks: ByteSource, *, max_bytes: int) -> StoredObject:
        """Store the bytes of `chunks` (an iterable of bytes or a binary file-like) under `key`.

        Reads and writes chunk by chunk, never holding the whole content in memory, and computes
        the SHA-256 on the way. When the size passes `max_bytes`, stops reading, removes anything
        partially written and raises `TooLarge`: an object under `key` is then unchanged, and an
        oversize upload is never visible. The object appears whole or not at all, and writing the
        same content again is harmless (idempotent).
        """
        ...

    def write_bytes(self, key: str, data: bytes) -> StoredObject:
        """Store a small in-memory value under `key` (same guarantees as `write_stream`)."""
        ...

    def open_read(self, key: str) -> BinaryIO:
        """Open the object for streaming reads; the caller closes it. `ObjectNotFound` if absent."""
        ...

    def read_bytes(self, key: str, *, max_bytes: int) -> bytes:
        """Return the whole object.

        Raises `TooLarge` if it exceeds `max_bytes` and `ObjectNotFound` if absent.
        """
        ...

    def head(self, key: str) -> ObjectInfo | None:
        """Return the object's size and metadata without reading it, or None if absent."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object; deleting an absent object is not an error."""
        ...

    def presigned_put_url(
        self, key: str, *, content_type: str, max_bytes: int, expires_in: int
    ) -> str | None:
        """Return a URL a client can PUT the object to directly, or None if this storage has none.

        The URL is bound to `content_type` and expires after `expires_in` seconds. `max_bytes`
        cannot be enforced by every backend at upload time, so the receiver must check the size
        (with `head`) before accepting the object.
        """
        ...


def object_key(tenant_id: UUID | str, *parts: str) -> str:
    """Build the key of an object owned by `tenant_id`: `tenants/{tenant_id}/{parts...}`.

    A part may hold several segments separated by "/". Raises `InvalidObjectKey` when a segment
    is empty or does not match `[A-Za-z0-9][A-Za-z0-9._=-]*`, or when no part is given.
    """
    if not parts:
        raise InvalidObjectKey("an object key needs at least one part after the tenant")
    return validate_key("/".join((TENANTS_PREFIX, str(tenant_id), *parts)))


def validate_key(key: str) -> str:
    """Return `key` unchanged if it is a well-formed tenant key, else raise `InvalidObjectKey`."""
    segments = key.split("/")
    if len(key) > MAX_KEY_LENGTH or len(segments) < 3 or segments[0] != TENANTS_PREFIX:
        raise InvalidObjectKey("object key must look like tenants/{tenant_id}/{name}")
    for segment in segments:
        if not _SEGMENT.fullmatch(segment):
            raise InvalidObjectKey(f"object key segment {segment[:40]!r} is not allowed")
    return key


def iter_chunks(source: ByteSource, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield the bytes of an iterable of chunks or of a binary file-like, chunk by chunk."""
    if isinstance(source, bytes | bytearray | memoryview):
        # Iterating bytes yields ints: a caller meant write_bytes.
        raise TypeError("write_stream takes chunks or a file-like; use write_bytes for bytes")
    read = getattr(source, "read", None)
    if read is None:
        yield from source
        return
    while chunk := read(chunk_size):
        yield chunk


def copy_limited(source: ByteSource, sink: Writable, *, max_bytes: int) -> tuple[int, str]:
    """Copy `source` into `sink`, returning (size, hex SHA-256); `TooLarge` past `max_bytes`.

    On `TooLarge` the sink holds a prefix of the content: the caller discards it.
    """
    digest = hashlib.sha256()
    size = 0
    for chunk in iter_chunks(source):
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(max_bytes)
        digest.update(chunk)
        sink.write(chunk)
    return size, digest.hexdigest()


class LocalStorage:
    """Objects as files under a root folder, written atomically (temp file, fsync, rename)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*validate_key(key).split("/"))

    def write_stream(self, key: str, chunks: ByteSource, *, max_bytes: int) -> StoredObject:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # The temp name starts with a dot, which no key segment may, so it never shadows an object.
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as tmp:
                size, sha256 = copy_limited(chunks, tmp, max_bytes=max_bytes)
                tmp.flush()
                os.fsync(tmp.fileno())
            os.replace(tmp_name, path)
        except BaseException as exc:
            with suppress(FileNotFoundError):
                os.unlink(tmp_name)
            if isinstance(exc, TooLarge):
                log.info("storage.write_refused", key=key, max_bytes=max_bytes)
            raise
        _fsync_dir(path.parent)
        return StoredObject(key=key, size=size, sha256=sha256)

    def write_bytes(self, key: str, data: bytes) -> StoredObject:
        return self.write_stream(key, [data], max_bytes=len(data))

    def open_read(self, key: str) -> BinaryIO:
        try:
            return self._path(key).open("rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(f"no object stored under {key}") from None

    def read_bytes(self, key: str, *, max_bytes: int) -> bytes:
        with self.open_read(key) as stream:
            data = stream.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise TooLarge(max_bytes)
        return data

    def head(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        try:
            stat = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not path.is_file():
            return None
        modified = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
        return ObjectInfo(key=key, size=stat.st_size, sha256=None, last_modified=modified)

    def delete(self, key: str) -> None:
        with suppress(FileNotFoundError, NotADirectoryError):
            self._path(key).unlink()

    def presigned_put_url(
        self, key: str, *, content_type: str, max_bytes: int, expires_in: int
    ) -> str | None:
        """None: local uploads go through the API's own signed upload endpoint."""
        validate_key(key)
        return None


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable, not only the file's content.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_storage(url: str) -> Storage:
    """Open the storage a URL names.

    `file:///abs/path` or a plain path (relative paths resolve against the working directory)
    → `LocalStorage`; `s3://bucket/prefix?endpoint_url=...&region=...` → `S3Storage`, with
    credentials from the usual AWS sources (environment, profile, instance role).
    Raises ValueError for any other URL.
    """
    parts = urlsplit(url)
    if parts.scheme == "s3":
        from docflow.documents.storage_s3 import S3Storage

        return S3Storage.from_url(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ValueError("a file storage URL must name an absolute path: file:///path")
        return LocalStorage(Path(unquote(parts.path)))
    if parts.scheme == "" and url:
        return LocalStorage(Path(url))
    raise ValueError(f"unsupported storage URL {url!r}: use file:///path, a path, or s3://bucket")
