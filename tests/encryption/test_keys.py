"""Tenants' data keys: made once on first use (also by two processes at once), rotated for new
writes while old files still open, re-wrapped under a new KEK without touching a file, and
wrapped by AWS KMS with the tenant as encryption context (moto's server)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from sqlalchemy import Engine

from docflow import db
from docflow.encryption import service
from docflow.encryption.kek import FileKek, KekSet, KekUnavailable, KmsKek, open_kek
from docflow.encryption.models import ACTIVE, RETIRED
from docflow.storage.base import Storage, object_key
from docflow.storage.local import LocalStorage
from docflow.storage.sealed import HEADER_SIZE, SealedStorage
from support.encryption_fixtures import TenantMaker, keyring_for
from support.s3_server import S3Server


def header_version(storage: Storage, key: str) -> int:
    with storage.open_read(key) as stream:
        return int.from_bytes(stream.read(HEADER_SIZE)[7:11], "big")


def versions(engine: Engine, tenant_id: str) -> list[tuple[int, str, str]]:
    with db.make_session_factory(engine)() as session:
        found = service.key_versions(session, tenant_id=tenant_id)
    return [(v.version, v.state, v.kek_id) for v in found]


def test_two_processes_making_the_first_key_at_once_agree(
    engine: Engine, kek: FileKek, new_tenant: TenantMaker
) -> None:
    tenant = new_tenant()
    keyrings = [keyring_for(engine, kek) for _ in range(4)]  # each its own cache
    start = threading.Barrier(len(keyrings))
    keys: list[bytes] = []
    errors: list[BaseException] = []

    def first_write(ring: service.DatabaseKeyring) -> None:
        start.wait()
        try:
            keys.append(ring.active_key(tenant).key)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_write, args=(r,)) for r in keyrings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(keys)) == 1 and len(keys) == len(keyrings)
    assert versions(engine, tenant) == [(1, ACTIVE, kek.kek_id)]


def test_rotation_seals_new_writes_with_a_new_version_and_old_files_still_open(
    engine: Engine, kek: FileKek, new_tenant: TenantMaker, tmp_path: Path
) -> None:
    tenant = new_tenant()
    raw = LocalStorage(tmp_path / "files")
    ring = keyring_for(engine, kek)
    storage = SealedStorage(raw, ring)
    old = object_key(tenant, "documents", "d1", "original")
    storage.write_bytes(old, b"before the rotation")
    with db.make_write_session_factory(engine)() as session, session.begin():
        assert service.rotate(session, KekSet(kek), tenant_id=tenant) == 2
    ring.forget(tenant)
    new = object_key(tenant, "documents", "d2", "original")
    storage.write_bytes(new, b"after the rotation")
    assert (header_version(raw, old), header_version(raw, new)) == (1, 2)
    assert storage.read_bytes(old, max_bytes=100) == b"before the rotation"
    assert storage.read_bytes(new, max_bytes=100) == b"after the rotation"
    assert [v[:2] for v in versions(engine, tenant)] == [(1, RETIRED), (2, ACTIVE)]
    # A process that had not heard of the rotation still reads both (by the header's version).
    assert SealedStorage(raw, keyring_for(engine, kek)).read_bytes(new, max_bytes=100)


def test_rewrap_moves_every_data_key_to_the_new_kek_without_touching_a_file(
    engine: Engine, kek: FileKek, new_tenant: TenantMaker, tmp_path: Path
) -> None:
    tenant = new_tenant()
    raw = LocalStorage(tmp_path / "files")
    key = object_key(tenant, "documents", "d1", "original")
    SealedStorage(raw, keyring_for(engine, kek)).write_bytes(key, b"sealed under v1")
    with db.make_write_session_factory(engine)() as session, session.begin():
        service.rotate(session, KekSet(kek), tenant_id=tenant)
    path = raw.root.joinpath(*key.split("/"))
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    new_kek = FileKek.load(tmp_path / "keys" / "kek-2", create=True)
    with pytest.raises(KekUnavailable):  # the new KEK alone cannot unwrap the old keys
        SealedStorage(raw, keyring_for(engine, new_kek)).read_bytes(key, max_bytes=100)
    with db.make_write_session_factory(engine)() as session, session.begin():
        moved = service.rewrap(session, KekSet(new_kek, [kek]), tenant_id=tenant)
    assert moved == 2
    assert {v[2] for v in versions(engine, tenant)} == {new_kek.kek_id}
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert SealedStorage(raw, keyring_for(engine, new_kek)).read_bytes(key, max_bytes=100) == (
        b"sealed under v1"
    )
    with db.make_write_session_factory(engine)() as session, session.begin():
        assert service.rewrap(session, KekSet(new_kek), tenant_id=tenant) == 0


def test_a_kek_file_is_private_and_a_missing_explicit_one_is_refused(tmp_path: Path) -> None:
    made = FileKek.load(tmp_path / "keys" / "kek", create=True)
    assert (tmp_path / "keys" / "kek").stat().st_mode & 0o777 == 0o600
    assert open_kek(f"file://{tmp_path / 'keys' / 'kek'}").kek_id == made.kek_id
    with pytest.raises(ValueError, match="no KEK file"):
        open_kek(f"file://{tmp_path / 'absent'}")
    with pytest.raises(ValueError, match="unsupported KEK URL"):
        open_kek("http://example.com/kek")


def test_kms_wraps_with_the_tenant_as_encryption_context(
    engine: Engine,
    new_tenant: TenantMaker,
    s3_server: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    kms = boto3.client("kms", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region)
    key_id = kms.create_key(Description="docflow test KEK")["KeyMetadata"]["KeyId"]
    url = f"kms://{key_id}?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
    kms_kek = open_kek(url)
    assert isinstance(kms_kek, KmsKek) and kms_kek.kek_id == f"kms:{key_id}"
    data_key = os.urandom(32)
    wrapped = kms_kek.wrap("ten_a", data_key)
    assert kms_kek.unwrap("ten_a", wrapped) == data_key
    with pytest.raises(KekUnavailable):  # another tenant's context does not decrypt it
        kms_kek.unwrap("ten_b", wrapped)
    with pytest.raises(ClientError, match="InvalidCiphertext"):
        kms.decrypt(CiphertextBlob=wrapped)  # no context at all: KMS itself refuses
    tenant = new_tenant()
    storage = SealedStorage(LocalStorage(tmp_path / "files"), keyring_for(engine, kms_kek))
    stored = object_key(tenant, "documents", "d1", "original")
    storage.write_bytes(stored, b"wrapped by KMS")
    assert versions(engine, tenant) == [(1, ACTIVE, f"kms:{key_id}")]
    fresh = SealedStorage(LocalStorage(tmp_path / "files"), keyring_for(engine, open_kek(url)))
    assert fresh.read_bytes(stored, max_bytes=100) == b"wrapped by KMS"
