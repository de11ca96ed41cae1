"""`docflow sources`: create, list, show, pause, resume and poll a project's watched folders, and
list a source's runs, through the HTTP API of a docflow server (the local `docflow serve` or a
remote one: `--url`/`--api-key`, `DOCFLOW_URL`/`DOCFLOW_API_KEY`, or a profile), like the other
remote commands; tables by default, `--output json|csv`."""

from __future__ import annotations

from typing import Any

import typer

from docflow.client.cli import (
    REMOTE_NOTE,
    KeyOption,
    LimitOption,
    ProfileOption,
    UrlOption,
    connect,
    listed,
    remote,
    v1,
)
from docflow.client.output import JsonOption, Output, OutputOption, chosen, print_object, print_rows

app = typer.Typer(
    help="Watched folders or bucket prefixes of a project: new files become a batch at each cron "
    "time." + REMOTE_NOTE,
    no_args_is_help=True,
)

ProjectOption = typer.Option(..., "--project", help="project id (prj_...)")
SourceArgument = typer.Argument(..., help="source id (src_...)")
SOURCE_FIELDS = (
    "id",
    "path",
    "workflow_id",
    "cron",
    "move_after",
    "paused",
    "healthy",
    "last_error",
    "next_poll_at",
    "last_poll_at",
)
RUN_FIELDS = (
    "id",
    "started_at",
    "files_seen",
    "files_taken",
    "files_skipped",
    "batch_id",
    "error",
)


def _print_source(output: Output, source: dict[str, Any]) -> None:
    print_object(output, [(key, source.get(key)) for key in SOURCE_FIELDS], source)


def _sources(project: str, *segments: str) -> str:
    return v1("projects", project, "sources", *segments)


@app.command("create")
@remote
def sources_create(
    path: str = typer.Argument(
        ..., help="folder (or bucket prefix), relative to the tenant's sources place"
    ),
    project: str = ProjectOption,
    workflow: str = typer.Option(..., "--workflow", help="workflow id (wfl_...)"),
    cron: str = typer.Option(..., "--cron", help="when to poll: 5 fields, or 6 with seconds"),
    move_after: bool = typer.Option(
        False, "--move-after", help="move files to processed/ or failed/ once done"
    ),
    paused: bool = typer.Option(False, "--paused", help="create it paused"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Watch a folder (or bucket prefix) of the project."""
    body = {
        "path": path,
        "workflow_id": workflow,
        "cron": cron,
        "move_after": move_after,
        "paused": paused,
    }
    with connect(url, api_key, profile) as api:
        source = api.request("POST", _sources(project), json=body)
    _print_source(chosen(output, as_json), source)


@app.command("list")
@remote
def sources_list(
    project: str = ProjectOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """List the project's sources."""
    with connect(url, api_key, profile) as api:
        items = api.get(_sources(project))["items"]
    rows = [[s.get(key) for key in SOURCE_FIELDS] for s in items]
    print_rows(chosen(output, as_json), SOURCE_FIELDS, rows, items)


@app.command("show")
@remote
def sources_show(
    source_id: str = SourceArgument,
    project: str = ProjectOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Show a source, its health and its next poll."""
    with connect(url, api_key, profile) as api:
        source = api.get(_sources(project, source_id))
    _print_source(chosen(output, as_json), source)


def _set_paused(
    paused: bool,
    source_id: str,
    project: str,
    output: Output,
    as_json: bool,
    url: str | None,
    api_key: str | None,
    profile: str | None,
) -> None:
    with connect(url, api_key, profile) as api:
        source = api.request("PATCH", _sources(project, source_id), json={"paused": paused})
    _print_source(chosen(output, as_json), source)


@app.command("pause")
@remote
def sources_pause(
    source_id: str = SourceArgument,
    project: str = ProjectOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Stop polling a source on its schedule."""
    _set_paused(True, source_id, project, output, as_json, url, api_key, profile)


@app.command("resume")
@remote
def sources_resume(
    source_id: str = SourceArgument,
    project: str = ProjectOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Poll a paused source on its schedule again, from now."""
    _set_paused(False, source_id, project, output, as_json, url, api_key, profile)


@app.command("runs")
@remote
def sources_runs(
    source_id: str = SourceArgument,
    project: str = ProjectOption,
    limit: int = LimitOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """List a source's polls, newest first."""
    with connect(url, api_key, profile) as api:
        items = listed(api.pages(_sources(project, source_id, "runs")), limit, "runs")
    rows = [[r.get(key) for key in RUN_FIELDS] for r in items]
    print_rows(chosen(output, as_json), RUN_FIELDS, rows, items)


@app.command("poll")
@remote
def sources_poll(
    source_id: str = SourceArgument,
    project: str = ProjectOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Poll a source now; prints the id of its run."""
    with connect(url, api_key, profile) as api:
        accepted = api.request("POST", _sources(project, source_id, "poll"))
    print_object(chosen(output, as_json), [("run_id", accepted["run_id"])], accepted)
