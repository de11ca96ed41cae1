"""`docflow keys seal`: the files of an installation that ran without encryption are sealed in
place, each under its tenant's data key, with the digests and sizes the database recorded still
true; sealed ones are left alone (a second run seals nothing); an upload a client POSTed
straight to the bucket is never touched. With DOCFLOW_ENCRYPT_REFUSE_PLAINTEXT a plaintext
object swapped in for a sealed one is refused (`plaintext_refused`) instead of read. Turning
encryption off later writes plaintext and still reads the sealed files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from docflow import db
from docflow.cli import app as cli
from docflow.config import Settings
from docflow.documents.keys import words_key
from docflow.documents.models import Document
from docflow.documents.service import document_key
from docflow.documents.uploads import receive
from docflow.documents.uploads.service import record_upload
from docflow.encryption import service
from docflow.encryption.service import DatabaseKeyring, open_file_storage
from docflow.storage.base import ObjectNotFound, Storage
from docflow.storage.local import LocalStorage
from docflow.storage.s3 import S3Storage
from docflow.storage.sealed import (
    MAGIC,
    SEAL_CHUNK,
    PlaintextRefused,
    SealBroken,
    SealedStorage,
    unwrap_storage,
)
from docflow.tenancy import TenantContext
from support.api_fixtures import ok, post_project, post_workflow
from support.db_fixtures import make_batch
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    invoice_pdf,
    launched_env,
    submit,
    wait_terminal,
)
from support.encryption_fixtures import TenantMaker

PDF = "application/pdf"

runner = CliRunner()


WORDS = b'{"kind":"pdf","pages":[]}'


@dataclass
class Installation:
    """A tenant whose files were stored while encryption was off."""

    tenant_id: str
    files: dict[str, bytes]  # document id -> its original
    result_key: str
    result: bytes
    words_key: str  # the first document's words (the second's were never kept)
    pending_id: str  # a document whose client POSTed its file but has not confirmed it
    posted: bytes


def _stored_plain(engine: Engine, raw: Storage, tenant_id: str) -> Installation:
    """Two landed documents (one several seal chunks long) and a stored result, written
    unsealed; a third document's upload posted to its incoming key and not yet taken."""
    originals = [b"%PDF-1.4 small\n", b"%PDF-1.4 " + bytes(range(256)) * (SEAL_CHUNK // 100)]
    tenant = TenantContext(tenant_id=tenant_id, scopes=("*",))
    files: dict[str, bytes] = {}
    with db.make_write_session_factory(engine)() as session, session.begin():
        batch = make_batch(session, tenant, count=3)
        ids = [d.id for d in batch.documents]
    for document_id, data in zip(ids, originals, strict=False):
        with db.make_write_session_factory(engine)() as session, session.begin():
            received = receive.store_delivery(
                raw, tenant_id=tenant_id, document_id=document_id, chunks=[data], max_bytes=10**8
            )
            record_upload(
                session,
                tenant_id=tenant_id,
                document_id=document_id,
                stored=received.stored,
                detected_type=received.detected_type,
            )
        files[document_id] = data
    result_key = document_key(tenant_id, ids[0], "result.json")
    result = b'{"fields": {"total": "12.00"}}'
    raw.write_bytes(result_key, result)
    raw.write_bytes(words_key(tenant_id, ids[0]), WORDS)
    with db.make_write_session_factory(engine)() as session, session.begin():
        db.bind_tenant(session, tenant_id)
        landed = session.get(Document, (tenant_id, ids[0]))
        assert landed is not None
        landed.result_ref = result_key
    posted = MAGIC + b" a client's file that happens to begin with the magic"
    raw.write_bytes(document_key(tenant_id, ids[2]), posted)
    words = words_key(tenant_id, ids[0])
    return Installation(tenant_id, files, result_key, result, words, ids[2], posted)


def _recorded(engine: Engine, tenant_id: str, document_id: str) -> Document:
    with db.make_session_factory(engine)() as session:
        db.bind_tenant(session, tenant_id)
        document = session.get(Document, (tenant_id, document_id))
        assert document is not None
        session.expunge(document)
        return document


def _starts_sealed(raw: Storage, key: str) -> bool:
    with raw.open_read(key) as stream:
        return stream.read(len(MAGIC)) == MAGIC


def _storage_url(raw: Storage) -> str:
    if isinstance(raw, LocalStorage):
        return f"file://{raw.root}"
    assert isinstance(raw, S3Storage)
    meta = raw.client.meta
    return (
        f"s3://{raw.bucket}/{raw.prefix}?endpoint_url={meta.endpoint_url}&region={meta.region_name}"
    )


def _seal_cli(
    monkeypatch: pytest.MonkeyPatch,
    db_url: str,
    tmp_path: Path,
    raw: Storage,
    *args: str,
) -> dict[str, object]:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DOCFLOW_STORAGE_URL", _storage_url(raw))
    monkeypatch.setenv("DOCFLOW_KEK_URL", f"file://{tmp_path / 'keys' / 'kek'}")
    result = runner.invoke(cli, ["keys", "seal", *args, "--json"])
    assert result.exit_code == 0, result.output
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def test_seal_seals_every_plaintext_file_once_and_the_recorded_digests_stay_true(
    engine: Engine,
    db_url: str,
    raw: Storage,
    keyring: DatabaseKeyring,
    new_tenant: TenantMaker,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = _stored_plain(engine, raw, new_tenant())
    keys = [_recorded(engine, site.tenant_id, d).storage_key for d in site.files]
    assert not any(_starts_sealed(raw, str(k)) for k in [*keys, site.result_key, site.words_key])
    incoming = document_key(site.tenant_id, site.pending_id)

    tenant = ("--tenant", site.tenant_id)
    dry = _seal_cli(monkeypatch, db_url, tmp_path, raw, *tenant, "--dry-run")
    assert (dry["dry_run"], dry["sealed"], dry["already_sealed"], dry["skipped"]) == (True, 4, 0, 0)
    assert not any(_starts_sealed(raw, str(k)) for k in [*keys, site.result_key])

    done = _seal_cli(monkeypatch, db_url, tmp_path, raw, *tenant)
    assert (done["sealed"], done["already_sealed"], done["skipped"]) == (4, 0, 0)
    assert done["tenants"] == [
        {"tenant": site.tenant_id, "sealed": 4, "already_sealed": 0, "skipped": 0}
    ]
    # Read back through a storage that now refuses plaintext: every file opens, and is exactly
    # what the database recorded (size and SHA-256 of the plaintext).
    sealed = SealedStorage(raw, keyring, refuse_plaintext=True)
    for document_id, original in site.files.items():
        document = _recorded(engine, site.tenant_id, document_id)
        assert document.storage_key is not None
        assert _starts_sealed(raw, document.storage_key)
        with raw.open_read(document.storage_key) as stream:
            assert original[:64] not in stream.read()
        read = sealed.read_bytes(document.storage_key, max_bytes=10**8)
        assert read == original
        assert (document.size, document.sha256) == (len(read), hashlib.sha256(read).hexdigest())
        info = sealed.head(document.storage_key)
        assert info is not None and info.size == document.size
    assert sealed.read_bytes(site.result_key, max_bytes=1000) == site.result
    assert sealed.read_bytes(site.words_key, max_bytes=1000) == WORDS

    # The client's posted upload is as it was posted, and is still taken as posted.
    assert raw.read_bytes(incoming, max_bytes=1000) == site.posted
    taken = receive.take_incoming(
        sealed, incoming, tenant_id=site.tenant_id, document_id=site.pending_id
    )
    assert taken.stored.sha256 == hashlib.sha256(site.posted).hexdigest()
    assert sealed.read_bytes(taken.stored.key, max_bytes=1000) == site.posted

    again = _seal_cli(monkeypatch, db_url, tmp_path, raw, *tenant)
    assert (again["sealed"], again["already_sealed"], again["skipped"]) == (0, 4, 0)


def test_seal_skips_a_file_gone_from_storage_and_resumes_after_an_interruption(
    engine: Engine, raw: Storage, keyring: DatabaseKeyring, new_tenant: TenantMaker
) -> None:
    site = _stored_plain(engine, raw, new_tenant())
    sealed = SealedStorage(raw, keyring)
    first, second = (str(_recorded(engine, site.tenant_id, d).storage_key) for d in site.files)
    # A run stopped after its first object: that one is sealed, the others as they were.
    assert sealed.seal_in_place(first) is True
    assert sealed.seal_in_place(first) is False  # sealed already: nothing written
    raw.delete(second)  # deleted with its batch meanwhile
    with db.make_session_factory(engine)() as session:
        keys = service.stored_keys(session, tenant_id=site.tenant_id)
    words = [words_key(site.tenant_id, d) for d in site.files]  # the second's never kept
    assert sorted(keys) == sorted([first, second, site.result_key, *words])
    counts = service.seal_files(sealed, keys, tenant_id=site.tenant_id)
    # Sealed: the result and the first document's words; the words never kept are no skip.
    assert (counts.sealed, counts.already_sealed, counts.skipped) == (2, 1, 1)
    assert raw.head(second) is None  # not written back
    with pytest.raises(ObjectNotFound):
        sealed.seal_in_place(second)
    assert sealed.read_bytes(first, max_bytes=10**8) == site.files[next(iter(site.files))]


def test_seal_refuses_when_encryption_is_off(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DOCFLOW_STORAGE_URL", f"file://{tmp_path / 'files'}")
    monkeypatch.setenv("DOCFLOW_ENCRYPT_FILES", "false")
    result = runner.invoke(cli, ["keys", "seal"])
    assert result.exit_code == 1
    assert "DOCFLOW_ENCRYPT_FILES is off" in result.stderr


def test_a_plaintext_object_swapped_in_is_refused_once_plaintext_is(
    sealed: SealedStorage, new_tenant: TenantMaker
) -> None:
    tenant = new_tenant()
    key = document_key(tenant, "doc_1", "upload-1")
    sealed.write_bytes(key, b"%PDF-1.4 the real invoice")
    sealed.inner.write_bytes(key, b"%PDF-1.4 a forged invoice")  # whoever can write the bucket
    assert sealed.read_bytes(key, max_bytes=100) == b"%PDF-1.4 a forged invoice"  # upgraded
    refusing = SealedStorage(sealed.inner, sealed.keyring, refuse_plaintext=True)
    with pytest.raises(PlaintextRefused) as refused:
        refusing.read_bytes(key, max_bytes=100)
    assert isinstance(refused.value, SealBroken)
    assert refused.value.code == "plaintext_refused"
    assert "DOCFLOW_ENCRYPT_REFUSE_PLAINTEXT" in refused.value.detail
    with pytest.raises(PlaintextRefused):
        refusing.copy(key, document_key(tenant, "doc_1", "upload-2"))
    # An empty plaintext object is refused the same way.
    sealed.inner.write_bytes(key, b"")
    with pytest.raises(PlaintextRefused):
        refusing.open_read(key)
    # A sealed object still reads.
    refusing.write_bytes(key, b"%PDF-1.4 sealed again")
    assert refusing.read_bytes(key, max_bytes=100) == b"%PDF-1.4 sealed again"


@pytest.fixture(scope="module")
def refusing_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbosEnv]:
    """The runtime and the API of an installation refusing plaintext."""
    with launched_env(tmp_path_factory.mktemp("refusing"), encrypt_refuse_plaintext=True) as env:
        yield env


def test_a_document_whose_file_was_swapped_for_plaintext_fails_cleanly(
    refusing_env: DbosEnv,
) -> None:
    env = refusing_env
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    case = Setup(env, tenant, project["id"], post_workflow(env.client, tenant, project["id"])["id"])
    pdf = invoice_pdf("INV-66", "66.00")
    batch = submit(case, [("swapped.pdf", PDF, pdf)])
    assert wait_terminal(case, batch["id"])["status"] == "SUCCEEDED"
    document_id = batch["documents"][0]["id"]
    key = _recorded(env.engine, tenant.tenant_id, document_id).storage_key
    assert key is not None
    raw = unwrap_storage(env.client.app.state.storage)
    raw.write_bytes(key, invoice_pdf("INV-66", "9999.00"))  # whoever can write the storage

    file = env.client.get(f"/v1/documents/{document_id}/file", headers=tenant.headers)
    assert file.status_code == 500
    assert file.json()["code"] == "plaintext_refused"
    assert b"9999.00" not in file.content

    # Run again on the same stored file: the document fails, at once, with a reason.
    again = ok(env.client.post(f"/v1/batches/{batch['id']}/rerun", headers=tenant.headers), 202)
    wait_terminal(case, again["id"])
    (failed,) = documents(case, again["id"])
    assert (failed["status"], failed["error_code"]) == ("FAILED", "internal_error")
    assert "PlaintextRefused" in failed["error_reason"]


def test_turning_encryption_off_keeps_the_sealed_files_readable_and_writes_plaintext(
    engine: Engine, db_url: str, kek: object, new_tenant: TenantMaker, tmp_path: Path
) -> None:
    tenant = new_tenant()
    place = {
        "env": "test",
        "database_url": db_url,
        "home": tmp_path / "home",
        "storage_url": f"file://{tmp_path / 'files'}",
        "kek_url": f"file://{tmp_path / 'keys' / 'kek'}",  # the `kek` fixture's file
    }
    sealed_key = document_key(tenant, "doc_1", "upload-1")
    on = open_file_storage(Settings(**place), engine)
    on.write_bytes(sealed_key, b"%PDF-1.4 stored while encryption was on")
    off = open_file_storage(Settings(**place, encrypt_files=False), engine)
    assert isinstance(off, SealedStorage) and not off.seal_writes
    # What was sealed still reads as the document, never as its ciphertext.
    assert off.read_bytes(sealed_key, max_bytes=100) == b"%PDF-1.4 stored while encryption was on"
    # New writes, and copies of sealed files, are plaintext.
    plain_key = document_key(tenant, "doc_2", "upload-1")
    off.write_bytes(plain_key, b"%PDF-1.4 stored with encryption off")
    assert not _starts_sealed(off.inner, plain_key)
    assert off.read_bytes(plain_key, max_bytes=100) == b"%PDF-1.4 stored with encryption off"
    copied = document_key(tenant, "doc_3", "upload-1")
    off.copy(sealed_key, copied)
    assert off.inner.read_bytes(copied, max_bytes=100) == b"%PDF-1.4 stored while encryption was on"
    with pytest.raises(ValueError, match="encryption is off"):
        off.seal_in_place(plain_key)
    # A plaintext file that begins as a sealed object does is read as it was written.
    for lookalike in (MAGIC + b"\x01\x00", MAGIC + b"\x01" + bytes(SEAL_CHUNK)):
        off.write_bytes(plain_key, lookalike)
        assert off.read_bytes(plain_key, max_bytes=2 * SEAL_CHUNK) == lookalike
        info = off.head(plain_key)
        assert info is not None and info.size == len(lookalike)
    # An installation without a KEK never sealed anything: the raw storage, and no KEK is made.
    fresh = {**place, "home": tmp_path / "fresh", "kek_url": ""}
    assert not isinstance(
        open_file_storage(Settings(**fresh, encrypt_files=False), engine), SealedStorage
    )
    assert not (tmp_path / "fresh" / "keys").exists()
