"""What the encryption tests share: committed tenants, a keyring on a local KEK, and the sealed
storage over a local folder or a bucket of the moto server."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine

from docflow import db
from docflow.encryption.kek import FileKek, Kek, KekSet
from docflow.encryption.service import DatabaseKeyring
from docflow.storage.base import Storage
from docflow.storage.local import LocalStorage
from docflow.storage.open import open_storage
from docflow.storage.s3 import S3Storage
from docflow.storage.sealed import SealedStorage
from docflow.tenants.service import create_tenant
from support.s3_server import S3Server

TenantMaker = Callable[[], str]


@pytest.fixture
def new_tenant(engine: Engine) -> TenantMaker:
    """Create and commit a tenant (the keyring reads in transactions of its own)."""

    def make() -> str:
        with db.make_write_session_factory(engine)() as session, session.begin():
            return create_tenant(session, name="Sealed").id

    return make


def keyring_for(engine: Engine, *keks: Kek) -> DatabaseKeyring:
    return DatabaseKeyring(
        db.make_session_factory(engine),
        db.make_write_session_factory(engine),
        KekSet(keks[0], list(keks[1:])),
    )


@pytest.fixture
def kek(tmp_path: Path) -> FileKek:
    return FileKek.load(tmp_path / "keys" / "kek", create=True)


@pytest.fixture
def keyring(engine: Engine, kek: FileKek) -> DatabaseKeyring:
    return keyring_for(engine, kek)


def bucket_storage(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> S3Storage:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    bucket = "sealed-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:20]
    storage = open_storage(
        f"s3://{bucket}/files?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
    )
    assert isinstance(storage, S3Storage)
    storage.client.create_bucket(Bucket=bucket)
    return storage


@pytest.fixture(params=["local", "s3"])
def raw(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """The storage under the seal: a local folder, or a bucket."""
    if request.param == "local":
        return LocalStorage(tmp_path / "files")
    server = request.getfixturevalue("s3_server")
    return bucket_storage(server, request.getfixturevalue("monkeypatch"), request)


@pytest.fixture
def sealed(raw: Storage, keyring: DatabaseKeyring) -> SealedStorage:
    return SealedStorage(raw, keyring)
