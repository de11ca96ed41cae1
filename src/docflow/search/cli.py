"""`docflow search rebuild|reconcile` (operator commands): repair the search projection of a
tenant (`--tenant`) or of every tenant (`--all`), from the documents, while the service runs."""

from __future__ import annotations

from functools import partial

import typer
from rich.table import Table

from docflow.cli_operator import fail, open_operator
from docflow.client.output import print_table
from docflow.events.repository import all_tenant_ids
from docflow.search import maintenance

app = typer.Typer(help="The search index: rebuild and reconcile.", no_args_is_help=True)

TENANT = typer.Option(None, "--tenant", help="tenant id (ten_...)")
ALL = typer.Option(False, "--all", help="every tenant")


def _run(tenant: str | None, every: bool, *, rebuild: bool) -> None:
    if (tenant is None) == (not every):
        raise fail("give --tenant TEN or --all")
    table = Table("tenant", "documents", "missing", "stale", "orphaned", "written")
    with open_operator() as operator:
        storage = operator.storage()
        if tenant is not None:
            tenant_ids = [operator.tenant(tenant).tenant_id]
        else:
            with operator.transaction() as session:
                tenant_ids = list(all_tenant_ids(session))
        walk = maintenance.rebuild if rebuild else maintenance.reconcile
        for tenant_id in tenant_ids:
            report = walk(
                partial(operator.transaction, tenant_id),
                storage,
                tenant_id=tenant_id,
                max_result_bytes=operator.settings.max_document_bytes,
            )
            table.add_row(
                tenant_id,
                *(str(n) for n in (report.documents, report.missing, report.stale)),
                str(report.orphaned),
                str(report.written),
            )
    print_table(table)


@app.command("rebuild")
def rebuild_command(tenant: str | None = TENANT, every: bool = ALL) -> None:
    """Write every entry again from the documents (searches keep answering meanwhile)."""
    _run(tenant, every, rebuild=True)


@app.command("reconcile")
def reconcile_command(tenant: str | None = TENANT, every: bool = ALL) -> None:
    """Find entries that drifted from the documents (missing, stale, orphaned), repair them and
    report the counts."""
    _run(tenant, every, rebuild=False)
