"""`docflow webhooks`: list, create and delete a tenant's endpoints, and `verify` a received
webhook (signature and timestamp tolerance), as an integrator's receiver would."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docflow.cli_operator import fail, open_operator
from docflow.config import Settings
from docflow.webhooks import service, signing

app = typer.Typer(help="Webhook endpoints, and verifying a received webhook.", no_args_is_help=True)

TenantOption = typer.Option(..., "--tenant", help="tenant id (ten_...)")
ProjectOption = typer.Option(..., "--project", help="project id (prj_...)")


def _out() -> Console:
    return Console(soft_wrap=True)


@app.command("list")
def list_endpoints(tenant: str = TenantOption, project: str = ProjectOption) -> None:
    """List a project's endpoints."""
    table = Table("id", "url", "event types", "enabled", "disabled reason")
    with open_operator() as operator, operator.transaction(tenant) as session:
        cursor: str | None = None
        while True:
            page = service.list_endpoints(
                session, operator.tenant(tenant), project_id=project, cursor=cursor, limit=200
            )
            for e in page.items:
                types = ", ".join(e.event_types) or "(all)"
                reason = e.disabled_reason or ""
                table.add_row(e.id, escape(e.url), types, str(e.enabled), escape(reason))
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    _out().print(table)


@app.command("create")
def create_endpoint(
    url: str = typer.Argument(..., help="http(s) URL that receives the POSTs"),
    tenant: str = TenantOption,
    project: str = ProjectOption,
    event_type: list[str] = typer.Option(
        [], "--event-type", help="an event type to receive (repeat); none: every type"
    ),
    description: str = typer.Option("", help="what the endpoint is for"),
) -> None:
    """Register an endpoint; prints its id and its secret (shown this once)."""
    settings = Settings().with_generated_secret()
    with open_operator(settings) as operator, operator.transaction(tenant) as session:
        created = service.create_endpoint(
            session,
            operator.tenant(tenant),
            project_id=project,
            url=url,
            event_types=event_type,
            description=description,
            key_material=settings.signing_secret,
            allow_private=settings.allow_private_webhook_urls,
        )
        endpoint_id, secret = created.endpoint.id, created.secret
    _out().print(f"endpoint [bold]{endpoint_id}[/bold]")
    _out().print(f"secret {secret}  (store it now: it is not shown again)")


@app.command("delete")
def delete_endpoint(
    endpoint_id: str = typer.Argument(..., help="endpoint id (whe_...)"),
    tenant: str = TenantOption,
) -> None:
    """Delete an endpoint."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        service.delete_endpoint(session, operator.tenant(tenant), endpoint_id=endpoint_id)
    _out().print(f"deleted {endpoint_id}")


def _parse_headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise fail(f"a header is 'name: value', got {value!r}")
        headers[name.strip().lower()] = content.strip()
    return headers


@app.command("verify")
def verify(
    secret: str = typer.Option(..., "--secret", help="the endpoint's secret (whsec_...)"),
    header: list[str] = typer.Option(
        ..., "--header", "-H", help="a received header, 'name: value' (repeat for all three)"
    ),
    body_file: Path = typer.Option(
        ..., "--body-file", exists=True, dir_okay=False, help="the exact body received"
    ),
    tolerance: int = typer.Option(
        signing.DEFAULT_TOLERANCE_SECONDS, "--tolerance", min=0, help="seconds of clock skew"
    ),
) -> None:
    """Check a received webhook's signature and timestamp; exit status 0 when valid, 1 not."""
    headers = _parse_headers(header)
    try:
        webhook_id = signing.verify(
            secret, headers, body_file.read_bytes(), now=time.time(), tolerance_seconds=tolerance
        )
    except signing.VerificationError as exc:
        raise fail(f"invalid webhook: {exc}") from exc
    _out().print(f"valid webhook {escape(webhook_id)}")
