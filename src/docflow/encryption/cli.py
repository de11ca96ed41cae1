"""`docflow keys list|rotate|new-kek|rewrap|seal` (operator commands): the tenants' data keys,
the key-encryption key that wraps them, and sealing the files stored before encryption
(docs/operations.md, "Encryption")."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import typer
from rich.console import Console

from docflow.cli_operator import Operator, fail, open_operator
from docflow.client.output import JsonOption, Output, OutputOption, chosen, print_rows
from docflow.encryption import service
from docflow.encryption.kek import FileKek, KekSet
from docflow.events.repository import all_tenant_ids
from docflow.storage.sealed import SealedStorage

app = typer.Typer(
    help="Encryption keys: each tenant's data keys and the KEK wrapping them, and sealing the "
    "files stored before encryption (operator: local database and DOCFLOW_STORAGE_URL).",
    no_args_is_help=True,
)

TENANT = typer.Option(None, "--tenant", help="one tenant (ten_...); default: every tenant")


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _tenants(operator: Operator, tenant: str | None) -> list[str]:
    if tenant is not None:
        return [operator.tenant(tenant).tenant_id]
    with operator.transaction() as session:
        return list(all_tenant_ids(session))


def _keks(operator: Operator) -> KekSet:
    try:
        return service.kek_set(operator.settings)
    except ValueError as exc:
        raise fail(str(exc)) from exc


@app.command("list")
def list_command(
    tenant: str | None = TENANT, output: Output = OutputOption, as_json: bool = JsonOption
) -> None:
    """List the data key versions (state, wrapping KEK, dates); never a key."""
    rows: list[list[object]] = []
    with open_operator() as operator:
        for tenant_id in _tenants(operator, tenant):
            with operator.transaction(tenant_id) as session:
                versions = service.key_versions(session, tenant_id=tenant_id)
            rows += [
                [v.tenant_id, v.version, v.state, v.kek_id, v.created_at, v.rewrapped_at]
                for v in versions
            ]
    data = {"items": [dict(zip(KEY_COLUMNS, _iso(row), strict=True)) for row in rows]}
    print_rows(chosen(output, as_json), KEY_COLUMNS, [_iso(row) for row in rows], data)


KEY_COLUMNS = ("tenant_id", "version", "state", "kek_id", "created_at", "rewrapped_at")


def _iso(row: list[object]) -> list[object]:
    return [value.isoformat() if isinstance(value, datetime) else value for value in row]


@app.command("rotate")
def rotate_command(tenant: str | None = TENANT) -> None:
    """Make a new data key version for new writes (files already stored keep theirs)."""
    with open_operator() as operator:
        keks = _keks(operator)
        for tenant_id in _tenants(operator, tenant):
            with operator.transaction(tenant_id) as session:
                version = service.rotate(session, keks, tenant_id=tenant_id)
            _out().print(f"{tenant_id}: data key version {version} is active")


@app.command("new-kek")
def new_kek_command(
    path: Path = typer.Argument(..., help="where to write the new key file (must not exist)"),
) -> None:
    """Make a new local KEK file (mode 0600) and print how to switch to it."""
    if path.exists():
        raise fail(f"{path} exists: choose a new file")
    kek = FileKek.load(path.resolve(), create=True)
    url = f"file://{path.resolve()}"
    _out().print(
        f"new KEK {kek.kek_id} in {url}\n"
        "next: set DOCFLOW_KEK_URL to it, add the current KEK's URL to "
        "DOCFLOW_KEK_PREVIOUS_URLS, restart, then run `docflow keys rewrap`"
    )


@app.command("rewrap")
def rewrap_command(tenant: str | None = TENANT) -> None:
    """Wrap every data key again under the current KEK (DOCFLOW_KEK_URL); no file is read or
    rewritten. Afterwards the previous KEKs are no longer needed."""
    total = 0
    with open_operator() as operator:
        keks = _keks(operator)
        for tenant_id in _tenants(operator, tenant):
            with operator.transaction(tenant_id) as session:
                total += service.rewrap(session, keks, tenant_id=tenant_id)
    _out().print(f"{total} data key(s) re-wrapped under {keks.current.kek_id}")


SEAL_COLUMNS = ("tenant", "sealed", "already_sealed", "skipped")


@app.command("seal")
def seal_command(
    tenant: str | None = TENANT,
    dry_run: bool = typer.Option(False, "--dry-run", help="only count what would be sealed"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """Seal every stored file and result written before encryption was on, under its tenant's
    active data key (operator: local database and DOCFLOW_STORAGE_URL). Sealed ones are left
    as they are, so it can be run again, or after an interruption. Skipped: recorded but no
    longer stored. Afterwards set DOCFLOW_ENCRYPT_REFUSE_PLAINTEXT=true."""
    counts: list[service.SealCounts] = []
    with open_operator() as operator:
        storage = operator.storage()
        if not isinstance(storage, SealedStorage) or not storage.seal_writes:
            raise fail("DOCFLOW_ENCRYPT_FILES is off: turn it on before sealing the files")
        for tenant_id in _tenants(operator, tenant):
            with operator.transaction(tenant_id) as session:
                keys = service.stored_keys(session, tenant_id=tenant_id)
            counts.append(service.seal_files(storage, keys, tenant_id=tenant_id, dry_run=dry_run))
    rows = [[c.tenant_id, c.sealed, c.already_sealed, c.skipped] for c in counts]
    total = {
        "sealed": sum(c.sealed for c in counts),
        "already_sealed": sum(c.already_sealed for c in counts),
        "skipped": sum(c.skipped for c in counts),
    }
    per_tenant = [dict(zip(SEAL_COLUMNS, row, strict=True)) for row in rows]
    data = {"dry_run": dry_run, **total, "tenants": per_tenant}
    rows.append(["total", *total.values()])
    print_rows(chosen(output, as_json), SEAL_COLUMNS, rows, data)
