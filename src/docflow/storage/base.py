"""The storage protocol and what both implementations share.

`Storage` is the one protocol; `local.LocalStorage` and `s3.S3Storage` implement it, and
`open.open_storage(url)` picks one from the configured URL. This module imports neither
implementation: they import it.

Every key lives under a tenant's namespace, `tenants/{tenant_id}/...`, built with `object_key`;
both implementations refuse any other key, so no caller can read or write outside a tenant or
outside the storage root.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, Protocol, runtime_checkable
from uuid import UUID

from docflow.errors import InvalidInput, LimitExceeded, NotFound

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


@dataclass(frozen=True, slots=True)
class PresignedPost:
    """A browser-style form upload: POST `url` as multipart/form-data with every one of
    `fields`, then the file as the last part (named `file`)."""

    url: str
    fields: dict[str, str]


@runtime_checkable
class Probe(Protocol):
    """A storage that can prove it is usable: `probe` writes and removes a tiny object under a
    reserved key outside every tenant's namespace, and raises when it cannot."""

    def probe(self) -> None: ...


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

    def copy(self, source: str, target: str) -> None:
        """Copy the object under `source` to `target` (inside the storage: S3 copies on the
        server side). `ObjectNotFound` if `source` is absent."""
        ...

    def presigned_post(
        self, key: str, *, content_type: str, size: int, expires_in: int
    ) -> PresignedPost | None:
        """Return a form a client can POST the object with directly, or None if this storage
        has none (then the API receives uploads itself).

        The form's policy binds the key, the Content-Type and the exact size: the storage
        itself refuses a body of any other size or type. It expires after `expires_in`
        seconds. The receiver still checks what landed (`head`) before accepting it.
        """
        ...

    def presigned_get_url(
        self, key: str, *, expires_in: int, content_type: str, content_disposition: str
    ) -> str | None:
        """Return a URL a client can GET the object from directly, or None if this storage has
        none (then the API streams it). The answer carries `content_type` and
        `content_disposition`; the URL expires after `expires_in` seconds."""
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
