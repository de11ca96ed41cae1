"""`docflow backup create|verify|restore` (operator commands: the installation's own settings,
its table owner's connection, every tenant)."""

from __future__ import annotations

import typer
from rich.console import Console

from docflow.backup import service
from docflow.backup.targets import open_target
from docflow.cli_operator import fail, prepare_home
from docflow.config import Settings
from docflow.storage.open import open_storage

app = typer.Typer(
    help="Back up the whole installation (database and stored files), check a backup, restore "
    "one into an empty installation. Operator commands: DOCFLOW_MIGRATION_DATABASE_URL (the "
    "table owner; on PostgreSQL a role that bypasses row-level security) and DOCFLOW_STORAGE_URL.",
    no_args_is_help=True,
)
WHERE = "a folder, or s3://bucket/prefix[?endpoint_url=…&region=…]"


def _out() -> Console:
    return Console(highlight=False)


@app.command("create")
def create_command(to: str = typer.Option(..., "--to", help=f"where to write it: {WHERE}")) -> None:
    """Take a consistent backup while the service runs: the database snapshot first, then every
    stored file it references, with a manifest of sizes and SHA-256 checksums."""
    settings = Settings()
    try:
        manifest = service.create(
            settings, open_storage(settings.resolved_storage_url()), open_target(to)
        )
    except (service.BackupError, RuntimeError, OSError, ValueError) as exc:
        raise fail(f"backup failed: {exc}") from exc
    total = manifest.database.size + sum(f.size for f in manifest.files)
    _out().print(
        f"backup of {manifest.database_kind} written to {to}: {len(manifest.files)} files, "
        f"{total} bytes"
    )
    if manifest.missing:
        _out().print(
            f"{len(manifest.missing)} referenced files were already gone from storage "
            "(listed in manifest.json under missing)"
        )


@app.command("verify")
def verify_command(source: str = typer.Argument(..., help=WHERE)) -> None:
    """Check every part of a backup against the manifest's sizes and checksums, and that its
    database part is a sound SQLite file or a readable dump. Exit 1 when anything is wrong."""
    try:
        checked = service.verify(open_target(source))
    except (service.BackupError, OSError, ValueError) as exc:
        raise fail(str(exc)) from exc
    manifest = checked.manifest
    for problem in checked.problems:
        _out().print(f"[red]{problem}[/red]")
    if not checked.ok:
        raise fail(f"{len(checked.problems)} problems in the backup at {source}")
    _out().print(
        f"ok: {manifest.database_kind} backup of {manifest.created_at} (docflow "
        f"{manifest.docflow_version}), {len(manifest.files)} files, every checksum matches"
    )


@app.command("restore")
def restore_command(source: str = typer.Option(..., "--from", help=WHERE)) -> None:
    """Restore a backup into an empty installation (a new DOCFLOW_HOME, or an empty PostgreSQL
    database, with its storage): verified first, then migrated to this version's schema."""
    settings = Settings()
    prepare_home(settings)
    try:
        manifest = service.restore(
            settings, open_storage(settings.resolved_storage_url()), open_target(source)
        )
    except (service.BackupError, RuntimeError, OSError, ValueError) as exc:
        raise fail(f"restore failed: {exc}") from exc
    _out().print(
        f"restored the {manifest.database_kind} backup of {manifest.created_at}: "
        f"{len(manifest.files)} files"
    )
