"""Receiving a document's bytes: within the size limit, hashed, and sniffed for their real type.

Nothing here touches the database: the bytes are stored (or, after a presigned POST, copied to a
key of their own and read back) before the landing is recorded, so no connection waits in a
transaction while a client sends its file. Each delivery (to the API, or taken from S3) gets an
object key of its own (`tenants/{t}/documents/{d}/upload-{delivery}`), so two deliveries of one
document never write over each other; recording picks one of them (see `service.record_upload`).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import IO

from docflow.documents.service import document_key
from docflow.extraction.sniff import sniff
from docflow.kit import ids
from docflow.storage.base import (
    CHUNK_SIZE,
    ByteSource,
    Storage,
    StoredObject,
    TooLarge,
    iter_chunks,
)
from docflow.storage.sealed import copy_unsealed

# sniff() looks for a PDF header anywhere in the first kilobyte.
SNIFF_BYTES = 1024
# Bodies up to this size stay in memory while they arrive; larger ones spill to a temp file.
_SPOOL_MEMORY = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Received:
    """A document's bytes as stored: the object (`stored`: key, size, SHA-256) and the
    `DocumentKind` value sniffed from its first bytes (`detected_type`, None when unrecognised)."""

    stored: StoredObject
    detected_type: str | None


async def spool_body(chunks: AsyncIterator[bytes], *, max_bytes: int) -> IO[bytes]:
    """Receive a request body into a temp file (memory up to 1 MB), refusing it with
    `TooLarge` as soon as it passes `max_bytes`; the caller closes the file."""
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY)  # noqa: SIM115
    size = 0
    try:
        async for chunk in chunks:
            size += len(chunk)
            if size > max_bytes:
                raise TooLarge(max_bytes)
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def store_delivery(
    storage: Storage, *, tenant_id: str, document_id: str, chunks: ByteSource, max_bytes: int
) -> Received:
    """Stream one delivery of a document's file to a key of its own, never whole in memory.

    The storage computes the size and SHA-256 on the way; the first bytes are kept aside to be
    sniffed. Raises `TooLarge` past `max_bytes`, with nothing stored.
    """
    head = bytearray()
    key = document_key(tenant_id, document_id, f"upload-{ids.ulid()}")
    stored = storage.write_stream(key, _tee_head(chunks, head), max_bytes=max_bytes)
    return Received(stored, _detected_type(bytes(head)))


def take_incoming(storage: Storage, incoming: str, *, tenant_id: str, document_id: str) -> Received:
    """A file a client POSTed straight to storage (S3, presigned): copy it inside the storage
    to a delivery key of its own (`upload-{delivery}`, which no upload URL names, so no client
    can write over it afterwards; sealed there when files are encrypted), then read the copy
    once, chunk by chunk, for its size, SHA-256 and type. `ObjectNotFound` when `incoming` is
    absent (taken meanwhile)."""
    key = document_key(tenant_id, document_id, f"upload-{ids.ulid()}")
    copy_unsealed(storage, incoming, key)
    sha = hashlib.sha256()
    head = b""
    size = 0
    with storage.open_read(key) as stream:
        while chunk := stream.read(CHUNK_SIZE):
            if len(head) < SNIFF_BYTES:
                head += chunk[: SNIFF_BYTES - len(head)]
            sha.update(chunk)
            size += len(chunk)
    return Received(StoredObject(key=key, size=size, sha256=sha.hexdigest()), _detected_type(head))


def _detected_type(head: bytes) -> str | None:
    kind = sniff(head)
    return kind.value if kind else None


def _tee_head(chunks: ByteSource, head: bytearray) -> Iterator[bytes]:
    """Pass `chunks` through, copying their first SNIFF_BYTES bytes into `head`."""
    for chunk in iter_chunks(chunks):
        if len(head) < SNIFF_BYTES:
            head += chunk[: SNIFF_BYTES - len(head)]
        yield chunk
