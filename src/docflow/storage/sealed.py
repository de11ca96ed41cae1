"""`SealedStorage`: any `Storage`, with every object sealed (AES-256-GCM) under its tenant's key.

The tenant is the one in the object key (`tenants/{tenant_id}/...`), and its data keys come from
a `Keyring` (`docflow.encryption` provides the one backed by the database and the KEK). Callers
see plaintext everywhere: sizes and SHA-256 digests are of the plaintext, reads decrypt.

An object is a header then chunks, streamed both ways (never the whole file in memory):

    header = MAGIC (6) | format (1) | data key version (4, big-endian) | nonce prefix (8)
    chunk i = AES-256-GCM(data key, nonce = prefix | i (4), plaintext[i], aad)
    aad = header | object key | i (4) | final flag (1)

Every chunk holds `SEAL_CHUNK` plaintext bytes except the final one (0 to `SEAL_CHUNK`), and
carries a 16-byte tag. The AAD binds each chunk to its position, to the end of the object and
to its key, so a changed byte, a truncated object, chunks reordered, or an object moved to
another key or tenant fails with `SealBroken` (code `sealed_object_invalid`), never as wrong
plaintext. The header is covered too: a changed key version or nonce fails the same way.

An object without the magic was stored before encryption was turned on; it reads as it is,
unless the storage refuses plaintext (`refuse_plaintext`, `DOCFLOW_ENCRYPT_REFUSE_PLAINTEXT`,
on once every file is sealed by `docflow keys seal`): then reading it fails with
`PlaintextRefused` (code `plaintext_refused`), so a plaintext object swapped in for a sealed
one is never served. `seal_in_place` seals an object stored before encryption where it is.
With `seal_writes` off (encryption turned off later) writes and copies are plaintext, and the
objects sealed before still read decrypted.
`copy` decrypts and seals again under the target key, since a sealed object is bound to its
own key. An upload a client POSTed straight to the bucket (a presigned form) is never sealed
and is never read through this class: `copy_unsealed` takes its bytes as they are (even if
they begin with the magic), and its size is the inner storage's.
"""

from __future__ import annotations

import hashlib
import io
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from docflow.errors import DomainError
from docflow.observability.metrics import STORED_FILE_INTEGRITY_FAILURES as INTEGRITY_FAILURES
from docflow.storage.base import (
    ByteSource,
    ObjectInfo,
    ObjectNotFound,
    PresignedPost,
    Storage,
    StoredObject,
    TooLarge,
    iter_chunks,
    validate_key,
)

MAGIC = b"DFSEAL"
FORMAT = 1
SEAL_CHUNK = 64 * 1024
TAG = 16
_HEADER = struct.Struct(">6sBI8s")
HEADER_SIZE = _HEADER.size
_POSITION = struct.Struct(">IB")


class SealBroken(DomainError):
    """A sealed object does not decrypt: changed, truncated, reordered, or not this key's."""

    code = "sealed_object_invalid"
    status = 500
    title = "Stored file unreadable"


class PlaintextRefused(SealBroken):
    """An object without a seal header, read from a storage that refuses plaintext."""

    code = "plaintext_refused"


@dataclass(frozen=True, slots=True)
class DataKey:
    """One version of a tenant's data key, unwrapped (32 bytes, AES-256)."""

    version: int
    key: bytes


class Keyring(Protocol):
    """A tenant's data keys: the active one for writes, any version for reads."""

    def active_key(self, tenant_id: str) -> DataKey: ...

    def key(self, tenant_id: str, version: int) -> DataKey: ...


def tenant_of(key: str) -> str:
    """The tenant id of a tenant object key (`tenants/{tenant_id}/...`)."""
    return validate_key(key).split("/")[1]


def sealed_size(plain_size: int) -> int:
    """The size of the sealed object holding `plain_size` bytes."""
    chunks = max(1, -(-plain_size // SEAL_CHUNK))
    return HEADER_SIZE + plain_size + TAG * chunks


def plain_size(sealed: int) -> int:
    """The plaintext size of a sealed object of `sealed` bytes (every chunk but the last is
    full, and the last holds 0 to SEAL_CHUNK bytes)."""
    body = sealed - HEADER_SIZE - TAG
    if body < 0:
        raise SealBroken("the stored object is shorter than a sealed header")
    full = body // (SEAL_CHUNK + TAG)
    return sealed - HEADER_SIZE - TAG * (full + 1)


def _aad(header: bytes, key: str, index: int, final: bool) -> bytes:
    return header + key.encode() + _POSITION.pack(index, 1 if final else 0)


def _nonce(prefix: bytes, index: int) -> bytes:
    return prefix + struct.pack(">I", index)


class SealedStorage:
    """Objects of `inner`, sealed under their tenant's data key (see the module docstring)."""

    def __init__(
        self,
        inner: Storage,
        keyring: Keyring,
        *,
        refuse_plaintext: bool = False,
        seal_writes: bool = True,
    ) -> None:
        self.inner = inner
        self.keyring = keyring
        self.refuse_plaintext = refuse_plaintext
        # False once encryption was turned off: writes (and copies) are plaintext, and what
        # was sealed before still reads decrypted.
        self.seal_writes = seal_writes

    def write_stream(self, key: str, chunks: ByteSource, *, max_bytes: int) -> StoredObject:
        if not self.seal_writes:
            return self.inner.write_stream(key, chunks, max_bytes=max_bytes)
        data_key = self.keyring.active_key(tenant_of(key))
        digest = hashlib.sha256()
        size = [0]

        def counted() -> Iterator[bytes]:
            for chunk in iter_chunks(chunks):
                size[0] += len(chunk)
                if size[0] > max_bytes:
                    raise TooLarge(max_bytes)
                digest.update(chunk)
                yield chunk

        sealed = _seal(counted(), key, data_key)
        self.inner.write_stream(key, sealed, max_bytes=sealed_size(max_bytes))
        return StoredObject(key=key, size=size[0], sha256=digest.hexdigest())

    def write_bytes(self, key: str, data: bytes) -> StoredObject:
        return self.write_stream(key, [data], max_bytes=len(data))

    def open_read(self, key: str) -> BinaryIO:
        stream = self.inner.open_read(key)
        try:
            head = _read_exactly(stream, HEADER_SIZE)
        except BaseException:
            stream.close()
            raise
        if not head.startswith(MAGIC):
            if self.refuse_plaintext:
                stream.close()
                INTEGRITY_FAILURES.labels(where="open").inc()
                raise PlaintextRefused(
                    "the stored object is not sealed, and this installation refuses unsealed "
                    "files (DOCFLOW_ENCRYPT_REFUSE_PLAINTEXT)"
                )
            return io.BufferedReader(_Prefixed(head, stream))  # stored before sealing
        try:
            # The first chunk is checked before the stream is handed out, so a reader (a
            # download about to send its headers) learns of a damaged object before any byte.
            raw = _Unsealer(stream, key, head, self.keyring)
            raw.open_first()
        except SealBroken:
            stream.close()
            if self.seal_writes:
                INTEGRITY_FAILURES.labels(where="open").inc()
                raise
            # With encryption off a plaintext file may begin as a sealed object does: one
            # whose first chunk does not open under its tenant's key is read as it is stored.
            return self.inner.open_read(key)
        except BaseException:
            stream.close()
            raise
        return io.BufferedReader(raw, buffer_size=SEAL_CHUNK)

    def read_bytes(self, key: str, *, max_bytes: int) -> bytes:
        with self.open_read(key) as stream:
            data = stream.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise TooLarge(max_bytes)
        return data

    def head(self, key: str) -> ObjectInfo | None:
        """The inner storage's answer, with the plaintext size of a sealed object (its header is
        read to tell); `sha256` is None, since the stored digest would be the ciphertext's."""
        info = self.inner.head(key)
        if info is None:
            return None
        # With encryption off, a plaintext file may begin as a sealed object does.
        if not (self.is_sealed(key) if self.seal_writes else self._opens_sealed(key)):
            return info
        return ObjectInfo(
            key=key,
            size=plain_size(info.size),
            sha256=None,
            last_modified=info.last_modified,
            content_type=info.content_type,
        )

    def is_sealed(self, key: str) -> bool:
        """Whether the object under `key` starts with a seal header (`ObjectNotFound` if
        absent)."""
        with self.inner.open_read(key) as stream:
            return _read_exactly(stream, len(MAGIC)) == MAGIC

    def _opens_sealed(self, key: str) -> bool:
        """Whether the object begins with a seal header and its first chunk opens under its
        tenant's key (one read of the object's start)."""
        with self.inner.open_read(key) as stream:
            head = _read_exactly(stream, HEADER_SIZE)
            if not head.startswith(MAGIC):
                return False
            try:
                _Unsealer(stream, key, head, self.keyring).open_first()
            except SealBroken:
                return False
        return True

    def seal_in_place(self, key: str) -> bool:
        """Seal the object under `key` if it is stored unsealed (before encryption), under the
        tenant's active data key: streamed, and written by the inner storage's atomic write,
        so the key holds the whole unsealed object or the whole sealed one, never part of
        either. Returns False, writing nothing, when it is sealed already. The bytes sealed are
        those read after the header check, so an object sealed meanwhile is never sealed
        twice. `ObjectNotFound` if absent."""
        if not self.seal_writes:
            raise ValueError("this storage writes plaintext (encryption is off): nothing to seal")
        stream = self.inner.open_read(key)
        with stream:
            head = _read_exactly(stream, HEADER_SIZE)
            if head.startswith(MAGIC):
                return False
            with io.BufferedReader(_Prefixed(head, stream)) as plain:
                self.write_stream(key, plain, max_bytes=1 << 62)
        return True

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def copy(self, source: str, target: str) -> None:
        """Decrypt `source` (or read it as it is, an unsealed upload) and seal it under `target`:
        a sealed object only opens under its own key."""
        validate_key(target)
        with self.open_read(source) as stream:
            self.write_stream(target, stream, max_bytes=1 << 62)

    def presigned_post(
        self, key: str, *, content_type: str, size: int, expires_in: int
    ) -> PresignedPost | None:
        """The inner storage's form: the object lands unsealed, and is sealed when the upload
        is taken (`copy` to a key of its own), the unsealed one then removed."""
        return self.inner.presigned_post(
            key, content_type=content_type, size=size, expires_in=expires_in
        )

    def presigned_get_url(
        self, key: str, *, expires_in: int, content_type: str, content_disposition: str
    ) -> str | None:
        """None where the object is sealed: the storage holds ciphertext, so the API streams
        the decrypted file itself. With encryption off, an object stored plaintext gets the
        inner storage's URL (its header is read to tell)."""
        validate_key(key)
        if self.seal_writes:
            return None
        try:
            if self._opens_sealed(key):
                return None
        except ObjectNotFound:
            pass  # the inner storage's URL answers 404 as it would for any missing object
        return self.inner.presigned_get_url(
            key,
            expires_in=expires_in,
            content_type=content_type,
            content_disposition=content_disposition,
        )


def copy_unsealed(storage: Storage, source: str, target: str) -> None:
    """Copy an object a client wrote straight to storage (a presigned upload) to `target`:
    its bytes exactly as written, whatever they begin with, sealed when `storage` seals. Such an
    object is never sealed, so it is never decrypted: a file that happens to begin with the
    magic is a file like any other."""
    if not isinstance(storage, SealedStorage):
        storage.copy(source, target)
        return
    validate_key(target)
    with storage.inner.open_read(source) as stream:
        storage.write_stream(target, stream, max_bytes=1 << 62)


def unwrap_storage(storage: Storage) -> Storage:
    """The storage under a `SealedStorage` (the storage itself otherwise): where the bytes
    are, as a backup copies them."""
    return storage.inner if isinstance(storage, SealedStorage) else storage


def _seal(plain: Iterator[bytes], key: str, data_key: DataKey) -> Iterator[bytes]:
    header = _HEADER.pack(MAGIC, FORMAT, data_key.version, os.urandom(8))
    prefix = header[-8:]
    aead = AESGCM(data_key.key)
    yield header
    buffer = bytearray()
    index = 0
    for chunk in plain:
        buffer += chunk
        while len(buffer) > SEAL_CHUNK:  # more follows: not the final chunk
            piece = bytes(buffer[:SEAL_CHUNK])
            del buffer[:SEAL_CHUNK]
            yield aead.encrypt(_nonce(prefix, index), piece, _aad(header, key, index, False))
            index += 1
    yield aead.encrypt(_nonce(prefix, index), bytes(buffer), _aad(header, key, index, True))


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            break
        data += more
    return data


class _Unsealer(io.RawIOBase):
    """Decrypts a sealed object chunk by chunk, one chunk read ahead to know the final one."""

    def __init__(self, stream: BinaryIO, key: str, header: bytes, keyring: Keyring) -> None:
        if len(header) < HEADER_SIZE:
            raise SealBroken("the stored object is shorter than a sealed header")
        _magic, version, key_version, prefix = _HEADER.unpack(header)
        if version != FORMAT:
            raise SealBroken(f"unknown sealed format {version}")
        self._stream = stream
        self._key = key
        self._header = header
        self._prefix = prefix
        self._aead = AESGCM(keyring.key(tenant_of(key), key_version).key)
        self._index = 0
        self._next = _read_exactly(stream, SEAL_CHUNK + TAG)
        self._plain = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def open_first(self) -> None:
        """Decrypt the first chunk now (`SealBroken` if it does not open), not at the first
        read."""
        if not self._plain and not self._done:
            self._plain = self._decrypt_next()

    def readinto(self, buffer: Any) -> int:
        while not self._plain and not self._done:
            try:
                self._plain = self._decrypt_next()
            except SealBroken:
                # A later chunk (the first is checked on opening): bytes were handed out.
                INTEGRITY_FAILURES.labels(where="stream").inc()
                raise
        count = min(len(buffer), len(self._plain))
        buffer[:count] = self._plain[:count]
        self._plain = self._plain[count:]
        return count

    def _decrypt_next(self) -> bytes:
        current = self._next
        self._next = _read_exactly(self._stream, SEAL_CHUNK + TAG) if current else b""
        final = not self._next
        if len(current) < TAG or (not final and len(current) != SEAL_CHUNK + TAG):
            raise SealBroken("the stored object is truncated or damaged")
        aad = _aad(self._header, self._key, self._index, final)
        try:
            plain = self._aead.decrypt(_nonce(self._prefix, self._index), current, aad)
        except InvalidTag:
            raise SealBroken("the stored object does not decrypt under its key") from None
        self._index += 1
        self._done = final
        return plain

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()


class _Prefixed(io.RawIOBase):
    """An unsealed object whose first bytes were already read to look for the header."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self._head = head
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            count = min(len(buffer), len(self._head))
            buffer[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        data = self._stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()
