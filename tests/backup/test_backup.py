"""Backups of a running installation: taken while a batch is being processed, restored into an
empty installation (a new SQLite home, or an empty PostgreSQL database), where every completed
document answers with its status, result and original bytes; checked part by part; written to
a folder or to S3 (the local moto server)."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from docflow import db
from docflow.backup import service
from docflow.backup.targets import FolderTarget, open_target
from docflow.cli import app as cli
from docflow.config import Settings
from docflow.main import create_app
from docflow.storage.open import open_storage
from support.db_fixtures import APP_ROLE, POSTGRES_ADMIN_URL, SYSTEM_ROLE, on_postgres
from support.dbos_fixtures import (
    Setup,
    dbos_env,
    documents,
    invoice_pdf,
    scanned_invoice,
    setup,
    submit,
    wait_terminal,
)
from support.s3_server import S3Server, s3_server

__all__ = ["dbos_env", "s3_server", "setup"]

PDF = "application/pdf"
TERMINAL = {"SUCCEEDED", "REVIEW_REQUIRED", "FAILED"}


@pytest.fixture
def empty_installation(tmp_path: Path) -> Iterator[Settings]:
    """Settings of a new installation: a new home (SQLite) or an empty database (PostgreSQL),
    and an empty storage folder."""
    home = tmp_path / "restored"
    storage = f"file://{home / 'files'}"
    if not on_postgres():
        yield Settings(env="test", home=home, storage_url=storage)
        return
    with db.temporary_database(POSTGRES_ADMIN_URL, prefix="docflow_restore") as owner_url:
        yield Settings(
            env="test",
            home=home,
            storage_url=storage,
            database_url=db.role_url(owner_url, APP_ROLE),
            migration_database_url=owner_url,
            system_database_url=db.role_url(owner_url, SYSTEM_ROLE),
        )


def files_of(setup: Setup, batch_id: str) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in documents(setup, batch_id)}


def test_a_backup_taken_during_a_batch_restores_every_completed_document(
    setup: Setup, empty_installation: Settings, tmp_path: Path
) -> None:
    done = submit(
        setup, [(f"a{i}.pdf", PDF, invoice_pdf(f"INV-8{i}", f"{i}0.00")) for i in range(3)]
    )
    wait_terminal(setup, done["id"])
    # Scans take a while each: the backup runs while this batch is being read.
    scans = [(f"s{i}.png", "image/png", scanned_invoice(f"INV-9{i}", f"{i}5.00")) for i in range(4)]
    running = submit(setup, scans)
    originals = {d["id"]: data for d, (_, _, data) in zip(running["documents"], scans, strict=True)}
    originals |= {
        d["id"]: invoice_pdf(f"INV-8{i}", f"{i}0.00") for i, d in enumerate(done["documents"])
    }
    where = tmp_path / "backup"
    env = setup.env
    manifest = service.create(
        env.settings, open_storage(env.settings.resolved_storage_url()), FolderTarget(where)
    )
    wait_terminal(setup, running["id"])
    assert service.verify(FolderTarget(where)).ok
    assert manifest.missing == []

    service.restore(
        empty_installation,
        open_storage(empty_installation.resolved_storage_url()),
        FolderTarget(where),
    )

    # The backup holds ciphertext and wrapped keys, not the KEK: the restored installation is
    # given the same one.
    same_kek = empty_installation.model_copy(update={"kek_url": env.settings.resolved_kek_url()})
    engine = db.make_engine(empty_installation.resolved_database_url())
    try:
        with TestClient(create_app(same_kek, engine=engine)) as restored:
            headers = setup.tenant.headers  # its key is in the backup
            first = restored.get(f"/v1/batches/{done['id']}", headers=headers)
            assert first.status_code == 200, first.text
            assert first.json()["status"] == "SUCCEEDED"
            completed = 0
            for batch_id in (done["id"], running["id"]):
                page = restored.get(f"/v1/batches/{batch_id}/documents", headers=headers).json()
                for document in page["items"]:
                    if document["status"] not in TERMINAL:
                        continue  # still being read when the snapshot was taken
                    completed += 1
                    one = restored.get(f"/v1/documents/{document['id']}", headers=headers).json()
                    if document["status"] != "FAILED":
                        assert one["result"] is not None, one
                        words = restored.get(
                            f"/v1/documents/{document['id']}/words", headers=headers
                        )
                        assert words.status_code == 200, words.text
                        assert words.json()["pages"][0]["words"]
                    file = restored.get(f"/v1/documents/{document['id']}/file", headers=headers)
                    assert file.status_code == 200
                    assert file.content == originals[document["id"]]
            assert completed >= 3
            assert len(manifest.files) >= completed
    finally:
        engine.dispose()


def test_a_backup_restored_without_its_kek_refuses_to_read_a_sealed_file(
    setup: Setup, empty_installation: Settings, tmp_path: Path
) -> None:
    pdf = invoice_pdf("INV-55", "55.00")
    batch = submit(setup, [("k.pdf", PDF, pdf)])
    wait_terminal(setup, batch["id"])
    document_id = batch["documents"][0]["id"]
    where = tmp_path / "backup"
    env = setup.env
    service.create(
        env.settings, open_storage(env.settings.resolved_storage_url()), FolderTarget(where)
    )
    service.restore(
        empty_installation,
        open_storage(empty_installation.resolved_storage_url()),
        FolderTarget(where),
    )
    other = tmp_path / "other-kek"
    assert CliRunner().invoke(cli, ["keys", "new-kek", str(other)]).exit_code == 0
    # No KEK given: the restored home makes a new key file of its own. Or a different one.
    without = empty_installation
    different = empty_installation.model_copy(update={"kek_url": f"file://{other}"})
    engine = db.make_engine(empty_installation.resolved_database_url())
    try:
        for settings in (without, different):
            with TestClient(create_app(settings, engine=engine)) as restored:
                headers = setup.tenant.headers
                one = restored.get(f"/v1/documents/{document_id}", headers=headers)
                assert one.status_code == 200  # the database came back whole
                file = restored.get(f"/v1/documents/{document_id}/file", headers=headers)
                assert file.status_code == 500, file.text
                problem = file.json()
                assert problem["code"] == "kek_unavailable"
                assert "neither DOCFLOW_KEK_URL nor in" in problem["detail"]
                assert pdf[:64] not in file.content
        # With the KEK it was taken under, the same file opens.
        same_kek = empty_installation.model_copy(
            update={"kek_url": env.settings.resolved_kek_url()}
        )
        with TestClient(create_app(same_kek, engine=engine)) as restored:
            file = restored.get(f"/v1/documents/{document_id}/file", headers=setup.tenant.headers)
            assert (file.status_code, file.content) == (200, pdf)
    finally:
        engine.dispose()


def test_verify_names_a_damaged_or_missing_part(setup: Setup, tmp_path: Path) -> None:
    batch = submit(setup, [("v.pdf", PDF, invoice_pdf("INV-77", "7.00"))])
    wait_terminal(setup, batch["id"])
    where = tmp_path / "backup"
    env = setup.env
    manifest = service.create(
        env.settings, open_storage(env.settings.resolved_storage_url()), FolderTarget(where)
    )
    runner = CliRunner()
    assert runner.invoke(cli, ["backup", "verify", str(where)]).exit_code == 0
    damaged = where / "files" / manifest.files[0].name
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    (where / manifest.database.name).unlink()
    checked = service.verify(FolderTarget(where))
    assert not checked.ok
    assert any(manifest.files[0].name in p and "sha256" in p for p in checked.problems)
    assert f"{manifest.database.name}: missing" in checked.problems
    result = runner.invoke(cli, ["backup", "verify", str(where)])
    assert result.exit_code == 1
    assert "missing" in result.output


def test_create_refuses_a_used_target_and_restore_a_used_installation(
    setup: Setup, tmp_path: Path
) -> None:
    env = setup.env
    storage = open_storage(env.settings.resolved_storage_url())
    where = FolderTarget(tmp_path / "backup")
    service.create(env.settings, storage, where)
    with pytest.raises(service.BackupError, match="already holds a backup"):
        service.create(env.settings, storage, where)
    # The running installation itself is not empty.
    with pytest.raises(service.BackupError, match=r"exists|not empty"):
        service.restore(env.settings, storage, where)


def test_a_backup_to_s3_verifies(
    setup: Setup, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    batch = submit(setup, [("s.pdf", PDF, invoice_pdf("INV-55", "5.00"))])
    wait_terminal(setup, batch["id"])
    bucket = f"backups-{secrets.token_hex(4)}"
    url = f"s3://{bucket}/nightly?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
    target = open_target(url)
    target.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    env = setup.env
    manifest = service.create(
        env.settings, open_storage(env.settings.resolved_storage_url()), target
    )
    checked = service.verify(open_target(url))
    assert checked.ok, checked.problems
    with target.open("manifest.json") as stream:
        assert json.loads(stream.read())["files"] == [
            {"name": f.name, "size": f.size, "sha256": f.sha256} for f in manifest.files
        ]
    stored = {f.name: f.sha256 for f in manifest.files}
    document = documents(setup, batch["id"])[0]
    key = next(k for k in stored if document["id"] in k)
    # The backup copies the stored bytes as they are: sealed, not the document.
    raw = open_storage(env.settings.resolved_storage_url()).read_bytes(key, max_bytes=1 << 24)
    assert stored[key] == hashlib.sha256(raw).hexdigest()
    assert stored[key] != hashlib.sha256(invoice_pdf("INV-55", "5.00")).hexdigest()


def test_the_commands_back_up_and_restore(
    setup: Setup, empty_installation: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = submit(setup, [("c.pdf", PDF, invoice_pdf("INV-66", "6.00"))])
    wait_terminal(setup, batch["id"])
    runner = CliRunner()

    def use(settings: Settings) -> None:
        monkeypatch.setenv("DOCFLOW_HOME", str(settings.home))
        monkeypatch.setenv("DOCFLOW_DATABASE_URL", settings.resolved_database_url())
        monkeypatch.setenv("DOCFLOW_STORAGE_URL", settings.resolved_storage_url())
        monkeypatch.setenv(
            "DOCFLOW_MIGRATION_DATABASE_URL", settings.resolved_migration_database_url()
        )
        monkeypatch.setenv("DOCFLOW_SYSTEM_DATABASE_URL", settings.resolved_system_database_url())

    where = tmp_path / "nightly"
    use(setup.env.settings)
    made = runner.invoke(cli, ["backup", "create", "--to", str(where)])
    assert made.exit_code == 0, made.output
    assert "written to" in made.output
    again = runner.invoke(cli, ["backup", "create", "--to", str(where)])
    assert again.exit_code == 1
    assert "already holds a backup" in again.output
    use(empty_installation)
    restored = runner.invoke(cli, ["backup", "restore", "--from", str(where)])
    assert restored.exit_code == 0, restored.output
    assert "restored the" in restored.output
    twice = runner.invoke(cli, ["backup", "restore", "--from", str(where)])
    assert twice.exit_code == 1
    assert "restore failed" in twice.output
