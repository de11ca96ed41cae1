"""`docflow webhooks`: list, create, update, enable, disable and delete a tenant's endpoints
(operator: the local database, as `PATCH /v1/webhooks/{id}` does through the API), and `verify`
a received webhook (signature and timestamp tolerance), as an integrator's receiver would."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from docflow.cli_operator import fail, open_operator
from docflow.client.output import JsonOption, Output, OutputOption, chosen, print_rows
from docflow.config import Settings
from docflow.webhooks import service, signing
from docflow.webhooks.models import WebhookEndpoint
from docflow.webhooks.schemas import EndpointRead

app = typer.Typer(help="Webhook endpoints, and verifying a received webhook.", no_args_is_help=True)

TenantOption = typer.Option(..., "--tenant", help="tenant id (ten_...)")
ProjectOption = typer.Option(..., "--project", help="project id (prj_...)")


def _out() -> Console:
    return Console(soft_wrap=True)


ENDPOINT_COLUMNS = ("id", "url", "event types", "enabled", "disabled reason")


@app.command("list")
def list_endpoints(
    tenant: str = TenantOption,
    project: str = ProjectOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """List a project's endpoints."""
    endpoints: list[EndpointRead] = []
    with open_operator() as operator, operator.transaction(tenant) as session:
        cursor: str | None = None
        while True:
            page = service.list_endpoints(
                session, operator.tenant(tenant), project_id=project, cursor=cursor, limit=200
            )
            endpoints.extend(EndpointRead.model_validate(e) for e in page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    rows = [
        [e.id, e.url, ", ".join(e.event_types) or "(all)", str(e.enabled), e.disabled_reason or ""]
        for e in endpoints
    ]
    data = [e.model_dump(mode="json") for e in endpoints]
    print_rows(chosen(output, as_json), ENDPOINT_COLUMNS, rows, data)


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


def _print_endpoint(endpoint: WebhookEndpoint) -> None:
    types = ", ".join(endpoint.event_types) or "(all)"
    state = "enabled" if endpoint.enabled else f"disabled ({endpoint.disabled_reason or ''})"
    _out().print(f"endpoint {endpoint.id}: {escape(endpoint.url)}; {types}; {escape(state)}")


def _update(
    tenant: str,
    endpoint_id: str,
    *,
    url: str | None = None,
    event_types: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
) -> None:
    """`service.update_endpoint` in one transaction, then the endpoint as it now is."""
    settings = Settings()
    with open_operator(settings) as operator, operator.transaction(tenant) as session:
        endpoint = service.update_endpoint(
            session,
            operator.tenant(tenant),
            endpoint_id=endpoint_id,
            url=url,
            event_types=event_types,
            description=description,
            enabled=enabled,
            allow_private=settings.allow_private_webhook_urls,
        )
        _print_endpoint(endpoint)


@app.command("update")
def update_endpoint(
    endpoint_id: str = typer.Argument(..., help="endpoint id (whe_...)"),
    tenant: str = TenantOption,
    url: str | None = typer.Option(None, "--url", help="the new http(s) URL"),
    event_type: list[str] | None = typer.Option(
        None, "--event-type", help="receive only these event types (repeat); replaces the list"
    ),
    all_event_types: bool = typer.Option(
        False, "--all-event-types", help="receive every event type (clears the list)"
    ),
    description: str | None = typer.Option(None, "--description", help="what it is for"),
) -> None:
    """Change an endpoint's URL, event types or description (its secret stays)."""
    if event_type and all_event_types:
        raise fail("give --event-type or --all-event-types, not both", code=2)
    types = [] if all_event_types else (event_type or None)
    if url is None and types is None and description is None:
        raise fail(
            "give at least one of --url, --event-type, --all-event-types, --description", code=2
        )
    _update(tenant, endpoint_id, url=url, event_types=types, description=description)


@app.command("enable")
def enable_endpoint(
    endpoint_id: str = typer.Argument(..., help="endpoint id (whe_...)"),
    tenant: str = TenantOption,
) -> None:
    """Enable an endpoint again (disabled by the tenant, or after a 410 Gone): new events are
    delivered to it, and its dead deliveries can be redelivered."""
    _update(tenant, endpoint_id, enabled=True)


@app.command("disable")
def disable_endpoint(
    endpoint_id: str = typer.Argument(..., help="endpoint id (whe_...)"),
    tenant: str = TenantOption,
) -> None:
    """Disable an endpoint: nothing is delivered to it until it is enabled again."""
    _update(tenant, endpoint_id, enabled=False)


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
