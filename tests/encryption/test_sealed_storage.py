"""The sealed storage: files round-trip through it on the local folder and on S3, what is
stored is never the plaintext, and any change to the stored bytes fails with
`sealed_object_invalid` instead of reading as something else."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest

from docflow.encryption.service import DatabaseKeyring
from docflow.storage.base import ObjectNotFound, Storage, TooLarge, object_key
from docflow.storage.local import LocalStorage
from docflow.storage.sealed import (
    HEADER_SIZE,
    MAGIC,
    SEAL_CHUNK,
    TAG,
    SealBroken,
    SealedStorage,
    copy_unsealed,
    plain_size,
    sealed_size,
)
from support.encryption_fixtures import TenantMaker

MARKER = b"INVOICE-4711 total 1234.56 EUR "


def content(size: int) -> bytes:
    """`size` bytes that hold the marker many times, so a plaintext copy would be seen."""
    return (MARKER * (size // len(MARKER) + 1))[:size]


def raw_bytes(storage: Storage, key: str) -> bytes:
    with storage.open_read(key) as stream:
        return stream.read()


@pytest.mark.parametrize(
    "size", [0, 1, SEAL_CHUNK - 1, SEAL_CHUNK, SEAL_CHUNK + 1, 3 * SEAL_CHUNK, 200_003]
)
def test_a_file_round_trips_and_is_stored_sealed(
    sealed: SealedStorage, raw: Storage, new_tenant: TenantMaker, size: int
) -> None:
    key = object_key(new_tenant(), "documents", "d1", "original")
    data = content(size)
    stored = sealed.write_stream(key, io.BytesIO(data), max_bytes=size)
    assert (stored.size, stored.sha256) == (size, hashlib.sha256(data).hexdigest())
    assert sealed.read_bytes(key, max_bytes=size) == data
    with sealed.open_read(key) as stream:
        pieces = iter(lambda: stream.read(7000), b"")
        assert b"".join(pieces) == data
    info = sealed.head(key)
    assert info is not None and info.size == size
    on_storage = raw_bytes(raw, key)
    assert on_storage.startswith(MAGIC)
    assert len(on_storage) == sealed_size(size) and plain_size(len(on_storage)) == size
    if size >= len(MARKER):  # a shorter plaintext could appear in random bytes by chance
        assert MARKER not in on_storage and data not in on_storage


def test_the_file_on_disk_is_not_the_document(
    keyring: DatabaseKeyring, new_tenant: TenantMaker, tmp_path: Path
) -> None:
    storage = SealedStorage(LocalStorage(tmp_path / "files"), keyring)
    key = object_key(new_tenant(), "documents", "d1", "original")
    data = content(100_000)
    storage.write_bytes(key, data)
    on_disk = (tmp_path / "files").joinpath(*key.split("/")).read_bytes()
    assert MARKER[:16] not in on_disk
    assert on_disk != data and len(on_disk) == sealed_size(len(data))


def test_an_oversize_write_stores_nothing(sealed: SealedStorage, new_tenant: TenantMaker) -> None:
    key = object_key(new_tenant(), "documents", "d1", "original")
    with pytest.raises(TooLarge):
        sealed.write_stream(key, iter([content(SEAL_CHUNK)] * 3), max_bytes=2 * SEAL_CHUNK)
    assert sealed.head(key) is None
    with pytest.raises(ObjectNotFound):
        sealed.read_bytes(key, max_bytes=10)
    sealed.write_bytes(key, b"small")
    with pytest.raises(TooLarge):
        sealed.read_bytes(key, max_bytes=4)


def _damaged(sealed: SealedStorage, raw: Storage, key: str, change: bytes) -> SealBroken:
    raw.write_bytes(key, change)
    with pytest.raises(SealBroken) as caught:
        sealed.read_bytes(key, max_bytes=10 * SEAL_CHUNK)
    assert caught.value.code == "sealed_object_invalid"
    return caught.value


def test_changed_truncated_or_reordered_chunks_fail(
    sealed: SealedStorage, raw: Storage, new_tenant: TenantMaker
) -> None:
    key = object_key(new_tenant(), "documents", "d1", "original")
    sealed.write_bytes(key, content(3 * SEAL_CHUNK + 100))
    good = raw_bytes(raw, key)
    block = SEAL_CHUNK + TAG
    chunks = [good[HEADER_SIZE + i * block : HEADER_SIZE + (i + 1) * block] for i in range(4)]
    header = good[:HEADER_SIZE]
    flipped = bytearray(good)
    flipped[HEADER_SIZE + block + 10] ^= 1
    _damaged(sealed, raw, key, bytes(flipped))
    _damaged(sealed, raw, key, header + b"".join(chunks[:3]))  # cut at a chunk boundary
    _damaged(sealed, raw, key, good[:-1])  # cut inside the last chunk
    _damaged(sealed, raw, key, header + chunks[1] + chunks[0] + chunks[2] + chunks[3])
    _damaged(sealed, raw, key, header + b"".join(chunks[:3]) + chunks[2] + chunks[3])
    _damaged(sealed, raw, key, header[:-1] + bytes([header[-1] ^ 1]) + good[HEADER_SIZE:])
    _damaged(sealed, raw, key, header)  # the header alone
    raw.write_bytes(key, good)
    assert sealed.read_bytes(key, max_bytes=4 * SEAL_CHUNK) == content(3 * SEAL_CHUNK + 100)


def test_an_object_moved_to_another_key_or_tenant_does_not_open(
    sealed: SealedStorage, raw: Storage, new_tenant: TenantMaker
) -> None:
    owner, other, keyless = new_tenant(), new_tenant(), new_tenant()
    key = object_key(owner, "documents", "d1", "original")
    sealed.write_bytes(key, content(5000))
    stolen = raw_bytes(raw, key)
    _damaged(sealed, raw, object_key(owner, "documents", "d2", "original"), stolen)
    sealed.write_bytes(object_key(other, "documents", "mine", "original"), b"x")  # has a key
    _damaged(sealed, raw, object_key(other, "documents", "d1", "original"), stolen)
    _damaged(sealed, raw, object_key(keyless, "documents", "d1", "original"), stolen)


def test_copy_seals_an_unsealed_upload_and_reseals_a_sealed_object(
    sealed: SealedStorage, raw: Storage, new_tenant: TenantMaker
) -> None:
    tenant = new_tenant()
    incoming = object_key(tenant, "documents", "d1", "incoming")
    data = content(SEAL_CHUNK + 5)
    raw.write_bytes(incoming, data)  # as a client's POST to a presigned form lands it
    info = sealed.head(incoming)
    assert info is not None and info.size == len(data)
    taken = object_key(tenant, "documents", "d1", "upload-1")
    sealed.copy(incoming, taken)
    assert raw_bytes(raw, taken).startswith(MAGIC)
    assert sealed.read_bytes(taken, max_bytes=len(data)) == data
    again = object_key(tenant, "documents", "d1", "upload-2")
    sealed.copy(taken, again)
    assert sealed.read_bytes(again, max_bytes=len(data)) == data
    with pytest.raises(ObjectNotFound):
        sealed.copy(object_key(tenant, "documents", "none"), again)


def test_an_upload_that_begins_with_the_magic_is_taken_as_it_was_posted(
    sealed: SealedStorage, raw: Storage, new_tenant: TenantMaker
) -> None:
    tenant = new_tenant()
    incoming = object_key(tenant, "documents", "d1", "incoming")
    posted = MAGIC + b"\x01" + os.urandom(5000)  # a client's file, not a sealed object
    raw.write_bytes(incoming, posted)
    taken = object_key(tenant, "documents", "d1", "upload-1")
    copy_unsealed(sealed, incoming, taken)
    assert raw_bytes(raw, taken) != posted
    assert sealed.read_bytes(taken, max_bytes=len(posted)) == posted
    plain = object_key(tenant, "documents", "d1", "upload-2")
    copy_unsealed(raw, incoming, plain)  # storage that does not seal copies as it is
    assert raw_bytes(raw, plain) == posted


def test_a_file_stored_before_encryption_still_reads(
    sealed: SealedStorage, raw: Storage, new_tenant: TenantMaker
) -> None:
    key = object_key(new_tenant(), "documents", "old", "original")
    data = os.urandom(3000)
    raw.write_bytes(key, data)
    assert sealed.read_bytes(key, max_bytes=3000) == data
    assert (
        sealed.presigned_get_url(
            key, expires_in=60, content_type="application/pdf", content_disposition="attachment"
        )
        is None
    )
