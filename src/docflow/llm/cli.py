"""`docflow usage llm`: a tenant's language-model usage per day and model (operator: the
local database, `--tenant`)."""

from __future__ import annotations

import json
from datetime import datetime

import typer
from rich.console import Console
from rich.table import Table

from docflow.cli_operator import OPERATOR_PANEL, open_operator
from docflow.client.output import print_table
from docflow.kit.clock import as_utc
from docflow.llm import service

app = typer.Typer(help="Usage: language-model calls, tokens and cost.", no_args_is_help=True)


@app.command("llm", rich_help_panel=OPERATOR_PANEL)
def llm_command(
    tenant: str = typer.Option(..., "--tenant", help="tenant id (ten_...)"),
    project: str | None = typer.Option(None, "--project", help="only this project's (prj_...)"),
    since: datetime | None = typer.Option(None, "--since", help="made at or after (UTC)"),
    until: datetime | None = typer.Option(None, "--until", help="made before (UTC)"),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of a table"),
) -> None:
    """Calls made to the provider, answers served from the cache (no call), tokens and cost
    per UTC day and model, as `GET /v1/usage/llm` answers them."""
    with open_operator() as operator, operator.transaction() as session:
        rows = service.usage(
            session,
            operator.tenant(tenant),
            since=as_utc(since) if since else None,
            until=as_utc(until) if until else None,
            project_id=project,
        )
    out = Console(soft_wrap=True)
    if as_json:
        items = [{**{k: getattr(r, k) for k in r.__slots__}, "cost": str(r.cost)} for r in rows]
        calls, hits = sum(r.calls for r in rows), sum(r.cache_hits for r in rows)
        out.print_json(json.dumps({"items": items, "calls": calls, "cache_hits": hits}))
        return
    table = Table(
        "day", "model", "provider", "calls", "cache hits", "input", "cached", "output", "cost (USD)"
    )
    for r in rows:
        table.add_row(
            r.day,
            r.model,
            r.provider,
            str(r.calls),
            str(r.cache_hits),
            str(r.input_tokens),
            str(r.cached_tokens),
            str(r.output_tokens),
            str(r.cost),
        )
    print_table(table)
