"""`docflow`: the command line's root (a composition root: it reads Settings).

Every command and group of the root is loaded only when it runs, or when its own `--help` is
asked: `docflow --help` lists them from `ROOT` without importing them, and a remote command
(`batches submit`, `documents show`, ...) loads only the HTTP client, never the services, the
database layer or the durable runtime. So the remote commands start in a fraction of a second,
while an operator command pays for what it uses.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer import _click as click  # the click that typer vendors, and its groups extend
from typer.core import TyperCommand, TyperGroup

from docflow.client.cli import REMOTE_COMMANDS, REMOTE_NOTE, REMOTE_PANEL, mount


@dataclass(frozen=True)
class Lazy:
    """A command or group of the root: `target` is "module:attribute", a typer.Typer (a group)
    or a function (a command); `summary` is what the root's --help shows for it, the first
    paragraph of its own help (tests/test_cli.py checks they agree)."""

    summary: str
    target: str | None = None  # None: a group of remote commands only (docflow.client.cli)
    panel: str | None = None


ROOT: dict[str, Lazy] = {
    "serve": Lazy(
        "Run the API, queue workers and scheduler in one process (embedded mode).",
        "docflow.processes:serve",
    ),
    "api": Lazy(
        "Run the API only (distributed mode, PostgreSQL): it enqueues work for `docflow worker` "
        "processes and runs none itself.",
        "docflow.processes:api",
    ),
    "worker": Lazy(
        "Run queue workers and the scheduler, no HTTP (distributed mode, PostgreSQL). Stops on "
        "SIGTERM or Ctrl+C, handing its unfinished work to the other workers.",
        "docflow.processes:worker",
    ),
    "demo": Lazy(
        "Create a demo tenant and workflows, submit generated invoices and receipts (text PDFs "
        "and scans) through the HTTP API, follow them, and print what was extracted.",
        "docflow.processes:run_demo_command",
    ),
    "eval": Lazy(
        "Run the engine over every labelled document in DATASET and report per-field accuracy, "
        "the accuracy of the fields found in each confidence decile with the expected "
        "calibration error, and the share and field accuracy of the documents in each status.",
        "docflow.evaluation.cli:eval_command",
    ),
    "migrate": Lazy(
        "Bring the database schema up to date, connected as the table owner.",
        "docflow.cli_commands:migrate",
    ),
    "tenants": Lazy(
        "Create, list, show, suspend and resume tenants (operator: the local database).",
        "docflow.cli_commands:tenants_app",
    ),
    "api-keys": Lazy(
        "Create, list and revoke a tenant's API keys.", "docflow.cli_commands:api_keys_app"
    ),
    "projects": Lazy("List and create a tenant's projects.", "docflow.cli_commands:projects_app"),
    "workflows": Lazy(
        "Extraction workflows: list and show them through the HTTP API (remote), apply a file "
        "on the local database (operator).",
        "docflow.cli_commands:workflows_app",
    ),
    "corpus": Lazy("Generated labelled documents for evaluation.", "docflow.corpus.cli:app"),
    "inspect": Lazy("Inspect executions.", "docflow.history.cli:app"),
    "dead-letters": Lazy("Events consumers gave up on.", "docflow.events.cli:dead_letters_app"),
    "events": Lazy("The event archive.", "docflow.events.cli:events_app"),
    "webhooks": Lazy(
        "Webhook endpoints, and verifying a received webhook.", "docflow.webhooks.cli:app"
    ),
    "users": Lazy(
        "Add, list, change the role of and remove a tenant's users.", "docflow.tenants.cli:app"
    ),
    "usage": Lazy("Usage: language-model calls, tokens and cost.", "docflow.llm.cli:app"),
    "search": Lazy("The search index: rebuild and reconcile.", "docflow.search.cli:app"),
    "sources": Lazy(
        "Watched folders or bucket prefixes of a project: new files become a batch at each cron "
        "time.",
        "docflow.sources.cli:app",
    ),
    "batches": Lazy(
        "Batches: submit, list, show and read results through the HTTP API (remote); re-run and "
        "compare runs on the local database (operator).",
        "docflow.batches.cli:app",
    ),
    "review": Lazy(
        "Review documents: the queue, claims, approve or reject.", "docflow.review.cli:app"
    ),
    "backup": Lazy(
        "Back up the whole installation (database and stored files), check a backup, restore "
        "one into an empty installation. Operator commands: DOCFLOW_MIGRATION_DATABASE_URL (the "
        "table owner; on PostgreSQL a role that bypasses row-level security) and "
        "DOCFLOW_STORAGE_URL.",
        "docflow.backup.cli:app",
    ),
    "keys": Lazy(
        "Encryption keys: each tenant's data keys and the KEK wrapping them, and sealing the "
        "files stored before encryption (operator: local database and DOCFLOW_STORAGE_URL).",
        "docflow.encryption.cli:app",
    ),
    "documents": Lazy(
        "Documents and their results, through the HTTP API (remote).", panel=REMOTE_PANEL
    ),
}


def _import(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _as_click(name: str, found: Any) -> click.Command:
    if isinstance(found, typer.Typer):
        command: click.Command = typer.main.get_group(found)
    else:  # a function: a Typer of one command is that command
        one = typer.Typer()
        one.command(name)(found)
        command = typer.main.get_command(one)
    command.name = name
    return command


def _remote_only(name: str) -> typer.Typer:
    return mount(name, typer.Typer(help=ROOT[name].summary + REMOTE_NOTE, no_args_is_help=True))


_loaded: dict[tuple[str, bool], click.Command] = {}


def load(name: str, *, remote_only: bool = False) -> click.Command:
    """The root's command `name`, imported now (once per process); `remote_only`: a group's
    remote commands alone, which need no operator module."""
    key = (name, remote_only or ROOT[name].target is None)
    if key not in _loaded:
        target = ROOT[name].target
        if key[1]:
            found: Any = _remote_only(name)
        else:
            assert target is not None
            found = _import(target)
            if name in REMOTE_COMMANDS:  # its remote commands beside the operator's
                found = mount(name, found)
        _loaded[key] = _as_click(name, found)
    return _loaded[key]


class _Listed(TyperCommand):
    """What the root's --help shows of a command it has not loaded."""

    def __init__(self, name: str, entry: Lazy) -> None:
        super().__init__(name, help=entry.summary)
        self.rich_help_panel = entry.panel


class LazyRoot(TyperGroup):
    """The root group: its commands come from `ROOT`, each imported when it runs."""

    listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *ROOT]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in ROOT:
            return super().get_command(ctx, cmd_name)
        return _Listed(cmd_name, ROOT[cmd_name]) if self.listing else load(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, rest = args[0], args[1:]
        if rest and rest[0] in REMOTE_COMMANDS.get(name, {}):
            return name, load(name, remote_only=True), rest
        return super().resolve_command(ctx, args)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


app = typer.Typer(
    cls=LazyRoot,
    name="docflow",
    help="Multi-tenant document extraction. Operator commands act on the local database "
    "(DOCFLOW_DATABASE_URL) for the tenant named by --tenant; remote commands (documents, "
    "batches submit|list|show|results|cancel|delete, workflows list|show, projects "
    "delete|update, sources) work through the HTTP API of the server in DOCFLOW_URL with the "
    "key in DOCFLOW_API_KEY. Each command's --help says which.",
    no_args_is_help=True,
)


@app.callback()
def _configure_logs() -> None:
    # Logs go to stderr as JSON lines, so stdout carries only what the command prints.
    from docflow.config import Settings
    from docflow.kit import logs

    settings = Settings()
    logs.configure_logging(settings.log_level, fmt=settings.log_format)


if __name__ == "__main__":
    app()
