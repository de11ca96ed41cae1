"""`docflow dead-letters list|redrive` and `docflow events replay` (operator commands).

Each takes the tenant explicitly (`--tenant`): they run with the operator's database access,
and everything they read or change is scoped to that tenant.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import typer
from dbos import DBOSClient
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy.orm import Session

from docflow import db, runtime
from docflow.config import Settings
from docflow.errors import DomainError
from docflow.events import service
from docflow.kit.clock import as_utc
from docflow.tenancy import TenantContext

app = typer.Typer(help="Events: dead letters and replay.", no_args_is_help=True)
dead_letters_app = typer.Typer(help="Events consumers gave up on.", no_args_is_help=True)
events_app = typer.Typer(help="The event archive.", no_args_is_help=True)
app.add_typer(dead_letters_app, name="dead-letters")
app.add_typer(events_app, name="events")

TENANT = typer.Option(..., "--tenant", help="tenant id (ten_...)")


@contextmanager
def _session() -> Iterator[tuple[Session, DBOSClient]]:
    """A write session (committed on success) and a DBOS client, or exit 1 on a domain error."""
    settings = Settings()
    engine = db.make_engine(settings.resolved_database_url())
    client = runtime.open_client(settings)
    try:
        with db.make_write_session_factory(engine)() as session, session.begin():
            yield session, client
    except DomainError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {escape(exc.detail)}")
        raise typer.Exit(1) from exc
    finally:
        client.destroy()
        engine.dispose()


@dead_letters_app.command("list")
def list_command(
    tenant: str = TENANT,
    consumer: str | None = typer.Option(None, help="only this consumer's"),
    category: str | None = typer.Option(None, help="only this error category"),
    since: datetime | None = typer.Option(None, help="created at or after (UTC)"),
    limit: int = typer.Option(100, min=1, max=service.MAX_LIST),
) -> None:
    """List a tenant's dead letters, newest first."""
    table = Table("id", "consumer", "event", "type", "category", "attempts", "created", "redriven")
    with _session() as (session, _):
        letters = service.list_dead_letters(
            session,
            TenantContext(tenant),
            consumer=consumer,
            category=category,
            since=as_utc(since) if since else None,
            limit=limit,
        )
        for letter in letters:
            redriven = (
                f"{letter.redriven_at:%Y-%m-%d %H:%M} by {letter.redriven_by}"
                if letter.redriven_at
                else ""
            )
            table.add_row(
                letter.id,
                escape(letter.consumer),
                letter.event_id,
                letter.event_type,
                letter.category,
                str(letter.attempts),
                f"{letter.created_at:%Y-%m-%d %H:%M:%S}",
                escape(redriven),
            )
    Console(soft_wrap=True).print(table)


@dead_letters_app.command("redrive")
def redrive_command(
    letter_id: str = typer.Argument(..., help="dead letter id (dlq_...)"),
    tenant: str = TENANT,
    by: str = typer.Option(..., "--by", help="who asks (recorded)"),
    reason: str = typer.Option(..., "--reason", help="why (recorded)"),
) -> None:
    """Deliver a dead letter's event again to its consumer, with its original event id."""
    with _session() as (session, client):
        letter = service.redrive(
            session, client, TenantContext(tenant), letter_id=letter_id, actor=by, reason=reason
        )
        workflow_id = letter.redrive_workflow_id
    typer.echo(f"redriven {letter_id} as {workflow_id}")


@events_app.command("replay")
def replay_command(
    since: datetime = typer.Option(..., "--since", help="events at or after this time (UTC)"),
    consumer: str = typer.Option(..., "--consumer", help="the consumer to deliver them to"),
    tenant: str = TENANT,
) -> None:
    """Hand a tenant's archived events since a time to a consumer again (an event it already
    had is a no-op)."""
    with _session() as (session, client):
        result = service.replay(
            session, client, TenantContext(tenant), consumer=consumer, since=as_utc(since)
        )
    typer.echo(f"replayed {result.events} event(s) to {result.consumer}")
