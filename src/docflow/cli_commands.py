"""The operator commands of `docflow`'s root: `migrate`, `tenants`, `api-keys`, `projects`,
`workflows` (the operator's half; the remote half is docflow.client.cli's). Loaded by
docflow.cli only when one of them runs.

Commands that act on a tenant's data take `--tenant ID`: the operator is trusted, and each
command runs in one transaction bound to that tenant, exactly as a request would be.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy import make_url

from docflow import db
from docflow.cli_operator import OPERATOR_PANEL, fail, fail_with, open_operator, prepare_home
from docflow.client.output import JsonOption, Output, OutputOption, chosen, print_rows
from docflow.config import Settings
from docflow.errors import DomainError
from docflow.extraction.workflow_file import load_workflow_file
from docflow.kit.clock import utcnow
from docflow.projects import service as projects_service
from docflow.projects.schemas import ProjectRead
from docflow.runtime.launch import engine_limits
from docflow.system_db import migrate_system_database
from docflow.tenants import service as tenants_service
from docflow.tenants.cli import register_directory
from docflow.tenants.schemas import ApiKeyRead
from docflow.workflows import evaluation
from docflow.workflows import service as workflows_service
from docflow.workflows.evaluation import Evaluator, local_engines
from docflow.workflows.schemas import WorkflowEvaluation

tenants_app = typer.Typer(
    help="Create, list, show, suspend and resume tenants (operator: the local database).",
    no_args_is_help=True,
)
api_keys_app = typer.Typer(
    help="Create, list and revoke a tenant's API keys.", no_args_is_help=True
)
projects_app = typer.Typer(help="List and create a tenant's projects.", no_args_is_help=True)
workflows_app = typer.Typer(
    help="Extraction workflows: list and show them through the HTTP API (remote), apply a file "
    "on the local database (operator).",
    no_args_is_help=True,
)


def _out() -> Console:
    # Made per command so the terminal width (COLUMNS) is read when the command runs.
    return Console(soft_wrap=True)


def _err() -> Console:
    return Console(stderr=True, soft_wrap=True)


TenantOption = typer.Option(..., "--tenant", help="tenant id (ten_...)")
DEFAULT_SCOPES = ["read", "write"]


def migrate(
    create_app_role: bool = typer.Option(
        False,
        "--create-app-role",
        help="PostgreSQL: also create the login roles of DOCFLOW_DATABASE_URL (not the owner, "
        "no BYPASSRLS; granted the data privileges) and of DOCFLOW_SYSTEM_DATABASE_URL "
        "(DBOS's own, granted schema dbos)",
    ),
) -> None:
    """Bring the database schema up to date, connected as the table owner."""
    settings = Settings()
    prepare_home(settings)
    owner_url = settings.resolved_migration_database_url()
    app_url = make_url(settings.resolved_database_url())
    role = app_url.username if app_url.get_backend_name() == "postgresql" else None
    if create_app_role:
        if role is None:
            _err().print("[red]--create-app-role needs a PostgreSQL DOCFLOW_DATABASE_URL[/red]")
            raise typer.Exit(2)
        system_url = make_url(settings.resolved_system_database_url())
        try:
            db.ensure_app_role(owner_url, role, password=app_url.password)
            db.ensure_system_role(
                owner_url, system_url.username or "", password=system_url.password
            )
        except (RuntimeError, ValueError) as exc:
            raise fail(str(exc)) from exc
        _out().print(f"roles [bold]{role}[/bold] and [bold]{system_url.username}[/bold] ready")
    if role is not None:
        db.run_migrations(owner_url, app_role=role)
    else:
        db.run_migrations(owner_url)
    # The durable runtime's tables (PostgreSQL: schema `dbos`, granted to the system role; the
    # app role may only enqueue).
    try:
        migrate_system_database(settings, app_role=role)
    except ValueError as exc:
        raise fail(str(exc)) from exc
    _out().print("[green]schema up to date[/green]")


@tenants_app.command("create")
def tenants_create(
    name: str = typer.Argument(..., help="tenant name"),
    plan: str = typer.Option("free", help="plan"),
) -> None:
    """Create a tenant and its first API key, with every scope (shown once)."""
    with open_operator() as operator, operator.transaction() as session:
        tenant = tenants_service.create_tenant(session, name=name, plan=plan)
        db.bind_tenant(session, tenant.id)
        key, token = tenants_service.create_api_key(session, tenant.id, name="owner", scopes=["*"])
        tenant_id, key_id = tenant.id, key.id
    _out().print(f"tenant [bold]{tenant_id}[/bold] ({escape(name)}, plan {plan})")
    _out().print(f"API key {key_id}: [bold]{token}[/bold]")
    _out().print("[yellow]store the key now: it is not shown again[/yellow]")


register_directory(tenants_app)  # `tenants list|show|suspend|resume`, after `create`


@api_keys_app.command("create")
def api_keys_create(
    tenant: str = TenantOption,
    name: str = typer.Option(..., "--name", help="what the key is for"),
    scope: list[str] | None = typer.Option(
        None,
        "--scope",
        help="read, write, review, admin or *; repeat for several (default: read and write; "
        "with --user: what the user's role grants)",
    ),
    user: str | None = typer.Option(
        None, "--user", help="user id (usr_...) of the member the key belongs to"
    ),
    expires_in_days: int | None = typer.Option(
        None, "--expires-in-days", min=1, max=3650, help="the key stops working after this"
    ),
) -> None:
    """Create an API key for a tenant (the key is shown once)."""
    expires_at = utcnow() + timedelta(days=expires_in_days) if expires_in_days else None
    with open_operator() as operator, operator.transaction(tenant) as session:
        scopes = scope or DEFAULT_SCOPES
        if not scope and user is not None:
            scopes = tenants_service.scopes_within_role(session, tenant, user_id=user, scopes=["*"])
        key, token = tenants_service.create_api_key(
            session, tenant, name=name, scopes=scopes, user_id=user, expires_at=expires_at
        )
        key_id = key.id
    _out().print(f"API key {key_id}: [bold]{token}[/bold]")
    if expires_at is not None:
        _out().print(f"it expires at {expires_at.isoformat(timespec='seconds')}")
    _out().print("[yellow]store the key now: it is not shown again[/yellow]")


API_KEY_COLUMNS = ("id", "name", "prefix", "scopes", "user", "created", "expires", "revoked")
PROJECT_COLUMNS = ("id", "name", "description", "created")


def _minute(at: datetime | None) -> str:
    return f"{at:%Y-%m-%d %H:%M}" if at else ""


@api_keys_app.command("list")
def api_keys_list(
    tenant: str = TenantOption, output: Output = OutputOption, as_json: bool = JsonOption
) -> None:
    """List a tenant's API keys (prefixes only)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        found = tenants_service.list_api_keys(session, tenant)
        keys = [ApiKeyRead.model_validate(k) for k in found]
    rows = [
        [
            k.id,
            k.name,
            k.prefix,
            " ".join(k.scopes),
            k.user_id or "",
            _minute(k.created_at),
            _minute(k.expires_at),
            _minute(k.revoked_at),
        ]
        for k in keys
    ]
    data = [k.model_dump(mode="json") for k in keys]
    print_rows(chosen(output, as_json), API_KEY_COLUMNS, rows, data)


@api_keys_app.command("revoke")
def api_keys_revoke(
    key_id: str = typer.Argument(..., help="key id (key_...)"), tenant: str = TenantOption
) -> None:
    """Revoke an API key: it stops working at once."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        tenants_service.revoke_api_key(session, tenant, key_id=key_id)
    _out().print(f"revoked {key_id}")


@projects_app.command("list", rich_help_panel=OPERATOR_PANEL)
def projects_list(
    tenant: str = TenantOption, output: Output = OutputOption, as_json: bool = JsonOption
) -> None:
    """List a tenant's projects."""
    projects: list[ProjectRead] = []
    with open_operator() as operator, operator.transaction(tenant) as session:
        cursor: str | None = None
        while True:
            page = projects_service.list_projects(
                session, operator.tenant(tenant), cursor=cursor, limit=200
            )
            projects.extend(ProjectRead.model_validate(p) for p in page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    rows = [[p.id, p.name, p.description, f"{p.created_at:%Y-%m-%d}"] for p in projects]
    data = [p.model_dump(mode="json") for p in projects]
    print_rows(chosen(output, as_json), PROJECT_COLUMNS, rows, data)


@projects_app.command("create", rich_help_panel=OPERATOR_PANEL)
def projects_create(
    name: str = typer.Argument(..., help="project name"),
    tenant: str = TenantOption,
    description: str = typer.Option("", help="what the project is for"),
) -> None:
    """Create a project."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        project = projects_service.create_project(
            session, operator.tenant(tenant), name=name, description=description
        )
        project_id = project.id
    _out().print(f"project [bold]{project_id}[/bold] ({escape(name)})")


@workflows_app.command("apply", rich_help_panel=OPERATOR_PANEL)
def workflows_apply(
    file: Path = typer.Option(..., "-f", "--file", exists=True, dir_okay=False, help="YAML"),
    project: str = typer.Option(..., "--project", help="project id (prj_...)"),
    tenant: str = TenantOption,
) -> None:
    """Create the workflow named in FILE in a project, or publish it as a new version (operator:
    the local database, --tenant)."""
    try:
        definition = load_workflow_file(file)
    except DomainError as exc:
        raise fail_with(exc, code=2) from exc
    with open_operator() as operator, operator.transaction(tenant) as session:
        view = workflows_service.apply_workflow(
            session, operator.tenant(tenant), project_id=project, definition=definition
        )
        workflow_id, version = view.id, view.version
    _out().print(
        f"workflow [bold]{workflow_id}[/bold] {escape(definition.name)!r} version {version}"
    )


@workflows_app.command("diff-eval", rich_help_panel=OPERATOR_PANEL)
def workflows_diff_eval(
    workflow_id: str = typer.Argument(..., help="workflow id (wfl_...)"),
    candidate: Path = typer.Option(
        ..., "--candidate", exists=True, dir_okay=False, help="the candidate definition (YAML)"
    ),
    tenant: str = TenantOption,
    against: int | None = typer.Option(
        None, "--against", min=1, help="the version to compare with (default: the current one)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the whole answer as JSON"),
) -> None:
    """Measure a candidate definition against the workflow's current version on its reviewed
    documents (the engine runs both here); publishes nothing. Exits 4 when the candidate loses
    accuracy on a field (its `regressions`), 0 otherwise."""
    try:
        definition = load_workflow_file(candidate)
    except DomainError as exc:
        raise fail_with(exc, code=2) from exc
    with open_operator() as operator:
        settings = operator.settings
        engines = local_engines(
            engine_limits(settings),
            ppocr_det_side=settings.ppocr_det_side,
            ppocr_threads=settings.ppocr_threads,
        )
        evaluator = Evaluator(
            engines=engines,
            max_documents=settings.evaluate_max_documents,
            seconds=settings.evaluate_seconds,
            max_document_bytes=settings.max_document_bytes,
            max_result_bytes=settings.max_document_bytes,
        )
        measured = evaluation.evaluate_candidate(
            lambda: operator.transaction(tenant),
            operator.tenant(tenant),
            operator.storage(),
            evaluator,
            workflow_id=workflow_id,
            candidate=definition,
            against_version=against,
        )
    answer = WorkflowEvaluation.of(measured)
    if as_json:
        print(answer.model_dump_json(indent=2))
    else:
        _print_evaluation(answer)
    if answer.regressions:  # scripts gate a change on it: a regression is a failed check
        raise typer.Exit(EXIT_REGRESSION)


EXIT_REGRESSION = 4


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _shown(value: str | None) -> str:
    return "nothing" if value is None else escape(repr(value))


def _print_evaluation(answer: WorkflowEvaluation) -> None:
    table = Table(
        "field", "labelled", "corrected", f"version {answer.current_version}", "candidate", "delta"
    )
    for f in answer.fields:
        table.add_row(
            f.field,
            str(f.labelled),
            str(f.corrected),
            f"{f.current_correct} ({_percent(f.current_accuracy)})",
            f"{f.candidate_correct} ({_percent(f.candidate_accuracy)})",
            "-" if f.delta is None else f"{f.delta:+.1%}",
        )
    o = answer.overall
    table.add_row(
        "[bold]overall[/bold]",
        str(o.labelled),
        "",
        f"{o.current_correct} ({_percent(o.current_accuracy)})",
        f"{o.candidate_correct} ({_percent(o.candidate_accuracy)})",
        "-" if o.delta is None else f"{o.delta:+.1%}",
    )
    _out().print(f"{answer.documents} reviewed documents")
    if answer.note:
        _out().print(answer.note)
    _out().print(table)
    for change in answer.changes:
        for v in change.fields:
            _out().print(
                f"{v.verdict:6} {escape(change.name)} {v.field}: expected {_shown(v.expected)}, "
                f"version {answer.current_version} {_shown(v.current)}, "
                f"candidate {_shown(v.candidate)}"
            )
    if answer.skipped:
        _out().print(f"[yellow]{len(answer.skipped)} documents left out[/yellow]")
    if answer.regressions:
        _out().print(f"[red]loses accuracy on: {', '.join(answer.regressions)}[/red]")
