"""`docflow dead-letters list|redrive` and `docflow events replay` (operator commands).

Each takes the tenant explicitly (`--tenant`): they run with the operator's database access,
and everything they read or change is scoped to that tenant. Dead webhook deliveries are dead
letters of consumer `webhooks` whose target is the endpoint; redriving one sends the event
again to that endpoint alone, with the same `webhook-id`. Documents that failed on an internal
error are dead letters of consumer `documents` whose target is the document; redriving one runs
the document again (`documents.service.redrive_document`).
"""

from __future__ import annotations

from datetime import datetime

import typer
from rich.console import Console

from docflow.cli_operator import open_operator
from docflow.client.output import (
    JsonOption,
    Output,
    OutputOption,
    chosen,
    print_json,
    print_rows,
)
from docflow.errors import DomainError, describe
from docflow.events import service
from docflow.events.schemas import DeadLetterRead
from docflow.kit.clock import as_utc

app = typer.Typer(help="Events: dead letters and replay.", no_args_is_help=True)
dead_letters_app = typer.Typer(help="Events consumers gave up on.", no_args_is_help=True)
events_app = typer.Typer(help="The event archive.", no_args_is_help=True)
app.add_typer(dead_letters_app, name="dead-letters")
app.add_typer(events_app, name="events")

TENANT = typer.Option(..., "--tenant", help="tenant id (ten_...)")
CONSUMER = typer.Option(
    None,
    "--consumer",
    help="only this consumer's (webhooks: dead deliveries; documents: failed on an internal error)",
)
TARGET = typer.Option(
    None, "--target", help="only for this target (a webhook endpoint whe_..., a document doc_...)"
)
CATEGORY = typer.Option(None, "--category", help="only this error category (e.g. http_5xx)")
SINCE = typer.Option(None, "--since", help="created at or after (UTC)")
UNTIL = typer.Option(None, "--until", help="created before (UTC)")
DEAD_LETTER_COLUMNS = (
    "id",
    "consumer",
    "target",
    "event",
    "type",
    "category",
    "attempts",
    "created",
    "redriven",
)


@dead_letters_app.command("list")
def list_command(
    tenant: str = TENANT,
    consumer: str | None = CONSUMER,
    target: str | None = TARGET,
    category: str | None = CATEGORY,
    since: datetime | None = SINCE,
    until: datetime | None = UNTIL,
    limit: int = typer.Option(100, min=1, max=service.MAX_LIST),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """List a tenant's dead letters, newest first (redriven ones with who, when and why)."""
    with open_operator() as operator, operator.transaction() as session:
        letters = service.list_dead_letters(
            session,
            operator.tenant(tenant),
            consumer=consumer,
            target=target,
            category=category,
            since=as_utc(since) if since else None,
            until=as_utc(until) if until else None,
            limit=limit,
        )
        read = [DeadLetterRead.model_validate(letter, from_attributes=True) for letter in letters]
    rows = []
    for letter in read:
        redriven = (
            f"{letter.redriven_at:%Y-%m-%d %H:%M} by {letter.redriven_by}: {letter.redrive_reason}"
            if letter.redriven_at
            else ""
        )
        rows.append(
            [
                letter.id,
                letter.consumer,
                letter.target or "",
                letter.event_id,
                letter.event_type,
                letter.category,
                letter.attempts,
                f"{letter.created_at:%Y-%m-%d %H:%M:%S}",
                redriven,
            ]
        )
    data = [letter.model_dump(mode="json") for letter in read]
    print_rows(chosen(output, as_json), DEAD_LETTER_COLUMNS, rows, data)


@dead_letters_app.command("redrive")
def redrive_command(
    letter_id: str | None = typer.Argument(
        None, help="one dead letter (dlq_...); or select them with the options"
    ),
    tenant: str = TENANT,
    by: str = typer.Option(..., "--by", help="who asks (recorded)"),
    reason: str = typer.Option(..., "--reason", help="why (recorded)"),
    consumer: str | None = CONSUMER,
    target: str | None = TARGET,
    category: str | None = CATEGORY,
    since: datetime | None = SINCE,
    until: datetime | None = UNTIL,
) -> None:
    """Deliver dead letters' events again, with their original event ids: one letter by id,
    or every letter not yet redriven that matches the options (each in its own transaction;
    exit status 1 if any was refused). A letter is redriven at most once."""
    selected = any(v is not None for v in (consumer, target, category, since, until))
    if (letter_id is None) == (not selected):
        Console(stderr=True).print(
            "[red]error:[/red] give a dead letter id, or select letters with --consumer, "
            "--target, --category, --since or --until (not both)"
        )
        raise typer.Exit(2)
    with open_operator() as operator:
        context = operator.tenant(tenant)
        if letter_id is not None:
            with operator.transaction() as session:
                letter = service.redrive(
                    session,
                    operator.client(),
                    context,
                    letter_id=letter_id,
                    actor=by,
                    reason=reason,
                )
                workflow_id = letter.redrive_workflow_id
            typer.echo(f"redriven {letter_id} as {workflow_id}")
            return
        with operator.transaction() as session:
            ids = [
                letter.id
                for letter in service.list_dead_letters(
                    session,
                    context,
                    consumer=consumer,
                    target=target,
                    category=category,
                    since=as_utc(since) if since else None,
                    until=as_utc(until) if until else None,
                    open_only=True,
                    limit=service.MAX_LIST,
                )
            ]
        refused = 0
        for one in reversed(ids):  # oldest first
            try:
                with operator.transaction() as session:
                    letter = service.redrive(
                        session, operator.client(), context, letter_id=one, actor=by, reason=reason
                    )
                    workflow_id = letter.redrive_workflow_id
            except DomainError as exc:
                refused += 1
                typer.echo(f"refused {one}: {describe(exc.detail, code=exc.code, field=exc.field)}")
                continue
            typer.echo(f"redriven {one} as {workflow_id}")
        typer.echo(f"{len(ids) - refused} redriven, {refused} refused")
    if refused:
        raise typer.Exit(1)


@events_app.command("replay")
def replay_command(
    since: datetime = typer.Option(..., "--since", help="events at or after this time (UTC)"),
    consumer: str = typer.Option(..., "--consumer", help="the consumer to deliver them to"),
    tenant: str = TENANT,
    as_json: bool = JsonOption,
) -> None:
    """Hand a tenant's archived events since a time to a consumer again (an event it already
    had is a no-op, unless its work failed: a consumer workflow or webhook delivery job that
    ended in ERROR is resumed from the step that failed). Targets are selected as for a live
    event: a webhook endpoint never gets an event of before its creation, nor one of a type it
    does not subscribe to; the skipped ones are counted by reason."""
    with open_operator() as operator:
        with operator.transaction() as session:
            result = service.replay(
                session,
                operator.client(),
                operator.tenant(tenant),
                consumer=consumer,
                since=as_utc(since),
            )
        resumed = service.resume_failed(operator.client(), result.jobs)
    if as_json:
        print_json(
            {
                "consumer": result.consumer,
                "events": result.events,
                "resumed": resumed,
                "not_handled": result.not_handled,
                "skipped": result.skipped,
            }
        )
        return
    typer.echo(
        f"replayed {result.events} event(s) to {result.consumer}, "
        f"resumed {resumed} failed workflow(s)"
    )
    if result.not_handled:
        typer.echo(f"not handed over: {result.not_handled} event(s) the consumer does not take")
    for reason, count in sorted(result.skipped.items()):
        typer.echo(f"skipped {count} target(s): {reason}")
