"""The remote commands of `docflow`: the daily job through the HTTP API of a docflow server.

`batches submit|list|show|results`, `documents list|show|download` and `workflows list|show`
need a server URL and an API key (`--url`/`--api-key`, `DOCFLOW_URL`/`DOCFLOW_API_KEY`, or a
profile of the configuration file: see docflow.client.config); they never open the database.
Every list and show prints a table, `--output json` or `--output csv` (`--json` for short) on
stdout; progress and errors go to stderr. An answer of the API that is a problem prints
`error: <detail> (<code>, field <field>)` and exits 1 (a 4xx) or 2 (a 5xx, or no answer).
"""

from __future__ import annotations

import functools
import itertools
import json
import mimetypes
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import quote

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from docflow.client import config
from docflow.client.output import (
    JsonOption,
    Output,
    OutputOption,
    chosen,
    err,
    print_json,
    print_object,
    print_rows,
)
from docflow.client.remote import Api, ApiError, ClientError, confirms_upload
from docflow.extraction.sniff import sniff
from docflow.kit import results

P = ParamSpec("P")
R = TypeVar("R")

REMOTE_PANEL = "Remote: through the HTTP API (DOCFLOW_URL, DOCFLOW_API_KEY or a profile)"
REMOTE_NOTE = (
    "\n\nRemote: works through the HTTP API of the server in DOCFLOW_URL with the key in "
    "DOCFLOW_API_KEY (or --url/--api-key, or --profile of the configuration file)."
)
TERMINAL = frozenset({"SUCCEEDED", "REVIEW_REQUIRED", "PARTIALLY_FAILED", "FAILED", "CANCELLED"})
# `batches submit --wait`: how the batch ended, as an exit status a script can test (0: every
# document SUCCEEDED or waits for a reviewer; 3 is the timeout).
EXIT_BATCH = {"FAILED": 4, "PARTIALLY_FAILED": 5, "CANCELLED": 6}
KIND_TYPES = {
    "pdf": "application/pdf",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "tiff": "image/tiff",
}
EXIT_TIMEOUT = 3
READERS = 8

UrlOption = typer.Option(None, "--url", help="server URL (default: DOCFLOW_URL, or the profile)")
KeyOption = typer.Option(
    None, "--api-key", help="API key (default: DOCFLOW_API_KEY, or the profile); never printed"
)
ProfileOption = typer.Option(
    None, "--profile", help="profile of the configuration file (default: DOCFLOW_PROFILE)"
)
LimitOption = typer.Option(100, "--limit", min=0, help="show at most N (0: all)")


class Refused(ClientError):
    """A command given something it cannot use (exit status 1)."""

    exit_code = 1


class TimedOut(ClientError):
    exit_code = EXIT_TIMEOUT


def remote(func: Callable[P, R]) -> Callable[P, R]:
    """A remote command: a client error ends it with its message on stderr, never a traceback."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ClientError as exc:
            err().print(f"[red]error:[/red] {escape(exc.message())}")
            raise typer.Exit(exc.exit_code) from None

    return run


def v1(*segments: str) -> str:
    """An API path; each segment (an id as typed) escaped, so it stays one segment."""
    return "/v1/" + "/".join(quote(str(segment), safe="") for segment in segments)


def connect(url: str | None, api_key: str | None, profile: str | None, **kwargs: Any) -> Api:
    found = config.resolve(url, api_key, profile)
    return Api(found.url, found.api_key, **kwargs)


def listed(items: Iterable[Any], limit: int, what: str) -> list[Any]:
    """At most `limit` of `items` (all when 0); says on stderr when some were left out."""
    if limit == 0:
        return list(items)
    shown = list(itertools.islice(items, limit + 1))
    if len(shown) > limit:
        err().print(f"showing the first {limit} {what}; --limit 0 shows all")
        return shown[:limit]
    return shown


# --- batches ---------------------------------------------------------------------------------

# A table's columns: (header, key of the API's answer). A list shows these; a show prints every
# key of `BATCH_FIELDS`.
BATCH_TABLE = (
    ("id", "id"),
    ("status", "status"),
    ("project_id", "project_id"),
    ("workflow_id", "workflow_id"),
    ("version", "workflow_version"),
    ("documents", "document_count"),
    ("uploaded", "uploaded_count"),
    ("succeeded", "succeeded_count"),
    ("review", "review_count"),
    ("failed", "failed_count"),
    ("cancelled", "cancelled_count"),
    ("created_at", "created_at"),
    ("completed_at", "completed_at"),
)
BATCH_COLUMNS = tuple(header for header, _ in BATCH_TABLE)
BATCH_FIELDS = (
    "id",
    "status",
    "rerun_of",
    "project_id",
    "workflow_id",
    "workflow_version",
    "document_count",
    "uploaded_count",
    "succeeded_count",
    "review_count",
    "failed_count",
    "cancelled_count",
    "scheduled_for",
    "upload_deadline",
    "created_at",
    "started_at",
    "completed_at",
)


def _batch_row(batch: dict[str, Any]) -> list[Any]:
    return [batch.get(key) for _, key in BATCH_TABLE]


def _batch_pairs(batch: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(key, batch.get(key)) for key in BATCH_FIELDS]


DOCUMENT_COLUMNS = (
    "id",
    "name",
    "status",
    "confidence",
    "error_code",
    "error_reason",
    "batch_id",
    "created_at",
)


def _document_row(document: dict[str, Any]) -> list[Any]:
    return [document.get(key) for key in DOCUMENT_COLUMNS]


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    """A batch as created, without its documents' upload URLs (each one is a credential)."""
    shown = {key: value for key, value in batch.items() if key != "documents"}
    shown["documents"] = [
        {k: v for k, v in document.items() if k not in ("upload_url", "upload")}
        for document in batch.get("documents", [])
    ]
    return shown


def content_type(path: Path) -> str:
    """The MIME type to declare: read from the first bytes (PDF, PNG, JPEG, TIFF), else guessed
    from the extension (the server reads the bytes, not this, to decide what the file is)."""
    with path.open("rb") as handle:
        kind = sniff(handle.read(1024))
    if kind is not None:
        return KIND_TYPES[kind.value]
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def files_of(paths: list[Path]) -> list[Path]:
    """The files named, and the files under each folder named (hidden ones left out), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    child
                    for child in path.rglob("*")
                    if child.is_file()
                    and not any(part.startswith(".") for part in child.relative_to(path).parts)
                )
            )
        elif path.is_file():
            found.append(path)
        else:
            raise Refused(f"no such file or folder: {path}")
    if not found:
        raise Refused("no files to submit")
    return found


def _upload_all(api: Api, batch: dict[str, Any], files: list[Path], concurrency: int) -> None:
    """Send every file to its document's upload target, `concurrency` at once, with a progress bar
    on stderr; the first failure is raised once every upload has ended."""
    targets = list(zip(batch["documents"], files, strict=True))
    failures: list[tuple[Path, ClientError]] = []

    def put(document: dict[str, Any], path: Path) -> None:
        api.upload(document, path)
        if confirms_upload(document):  # straight to S3: record the upload at once
            api.request("POST", v1("documents", document["id"], "uploaded"))

    columns = (
        TextColumn("uploading"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with (
        Progress(*columns, console=err(), transient=False) as progress,
        ThreadPoolExecutor(concurrency) as pool,
    ):
        task = progress.add_task("upload", total=len(targets))
        futures = {pool.submit(put, document, path): path for document, path in targets}
        for future in as_completed(futures):
            try:
                future.result()
            except ClientError as exc:
                failures.append((futures[future], exc))
            progress.advance(task)
    for path, failure in failures:
        err().print(f"[red]upload failed:[/red] {escape(str(path))}: {escape(failure.message())}")
    if failures:
        raise failures[0][1]


def _wait(api: Api, batch_id: str, timeout: float) -> dict[str, Any]:
    """The batch once terminal, polled with a growing interval; TimedOut after `timeout`."""
    deadline = time.monotonic() + timeout
    interval = 0.25
    with err().status(f"waiting for {batch_id}") as status:
        while True:
            batch: dict[str, Any] = api.get(v1("batches", batch_id))
            if batch["status"] in TERMINAL:
                return batch
            done = batch["succeeded_count"] + batch["review_count"] + batch["failed_count"]
            status.update(
                f"waiting for {batch_id}: {batch['status']}, {done}/{batch['document_count']} done"
            )
            if time.monotonic() >= deadline:
                raise TimedOut(
                    f"batch {batch_id} is still {batch['status']} after {timeout:g} s; "
                    f"follow it with `docflow batches show {batch_id}`"
                )
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            interval = min(interval * 2, 2.0)


def _print_summary(output: Output, batch: dict[str, Any], documents: list[dict[str, Any]]) -> None:
    if output is Output.json:
        print_json({"batch": batch, "documents": documents})
    elif output is Output.csv:
        print_rows(output, DOCUMENT_COLUMNS, [_document_row(d) for d in documents], documents)
    else:
        print_object(output, _batch_pairs(batch), batch)
        print_rows(output, DOCUMENT_COLUMNS, [_document_row(d) for d in documents], documents)


def _naming_the_file(exc: ApiError, files: list[Path]) -> ApiError:
    """A problem with `documents.N…` (the N-th file declared) says which file it is."""
    parts = (exc.field or "").split(".")
    if len(parts) >= 2 and parts[0] == "documents" and parts[1].isdigit():
        index = int(parts[1])
        if index < len(files):
            exc.detail = f"{files[index]}: {exc.detail}"
    return exc


@remote
def batches_submit(
    paths: list[Path] = typer.Argument(..., help="files, or folders whose files to submit"),
    project: str = typer.Option(..., "--project", help="project id (prj_...)"),
    workflow: str = typer.Option(..., "--workflow", help="workflow id (wfl_...)"),
    version: int | None = typer.Option(
        None, "--version", min=1, help="workflow version (default: the latest)"
    ),
    wait: bool = typer.Option(False, "--wait", help="wait until the batch ends; print it"),
    timeout: float = typer.Option(
        600.0, "--timeout", min=1, help="with --wait: give up after S seconds (exit 3)"
    ),
    concurrency: int = typer.Option(4, "--concurrency", min=1, max=32, help="uploads at once"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Submit files as one batch: declare it, upload every file (a progress bar on stderr) and,
    with --wait, wait until it ends and print its documents. Prints the batch. With --wait the
    exit status says how it ended: 0 SUCCEEDED or REVIEW_REQUIRED, 4 FAILED, 5 PARTIALLY_FAILED,
    6 CANCELLED (3: still running at --timeout)."""
    fmt = chosen(output, as_json)
    files = files_of(paths)
    declared = [
        {"name": path.name, "content_type": content_type(path), "size": path.stat().st_size}
        for path in files
    ]
    body: dict[str, Any] = {"project_id": project, "workflow_id": workflow, "documents": declared}
    if version is not None:
        body["workflow_version"] = version
    with connect(url, api_key, profile, connections=concurrency) as api:
        try:
            created = api.create("/v1/batches", body)
        except ApiError as exc:
            raise _naming_the_file(exc, files) from None
        batch_id = created["id"]
        err().print(f"batch {batch_id}: {len(files)} documents")
        try:
            _upload_all(api, created, files, concurrency)
        except ClientError:
            err().print(
                f"batch {batch_id} waits for the files not uploaded until its upload deadline; "
                "POST /v1/batches/{id}/start starts it without them"
            )
            raise
        batch = _wait(api, batch_id, timeout) if wait else api.get(v1("batches", batch_id))
        documents = list(api.pages(v1("batches", batch_id, "documents")))
    _print_summary(fmt, batch, documents)
    if wait and batch["status"] in EXIT_BATCH:
        err().print(f"batch {batch_id} ended {batch['status']}")
        raise typer.Exit(EXIT_BATCH[batch["status"]])


@remote
def batches_list(
    project: str | None = typer.Option(None, "--project", help="only this project's batches"),
    status: str | None = typer.Option(None, "--status", help="only batches in this status"),
    workflow: str | None = typer.Option(None, "--workflow", help="only this workflow's"),
    since: str | None = typer.Option(
        None, "--since", help="created at or after this time (ISO 8601, with a timezone)"
    ),
    until: str | None = typer.Option(
        None, "--until", help="created before this time (ISO 8601, with a timezone)"
    ),
    limit: int = LimitOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """List batches, newest first."""
    with connect(url, api_key, profile) as api:
        found: Iterator[Any] = api.pages(
            "/v1/batches",
            status=status,
            project_id=project,
            workflow_id=workflow,
            since=since,
            until=until,
        )
        items = listed(found, limit, "batches")
    print_rows(chosen(output, as_json), BATCH_COLUMNS, [_batch_row(b) for b in items], items)


@remote
def batches_show(
    batch_id: str = typer.Argument(..., help="batch id (bat_...)"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Show a batch: its status and counts."""
    with connect(url, api_key, profile) as api:
        batch = api.get(v1("batches", batch_id))
    print_object(chosen(output, as_json), _batch_pairs(batch), batch)


@remote
def batches_cancel(
    batch_id: str = typer.Argument(..., help="batch id (bat_...)"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Cancel a batch: its documents not yet done end CANCELLED and its execution stops."""
    with connect(url, api_key, profile) as api:
        batch = api.request("POST", v1("batches", batch_id, "cancel"))
    print_object(chosen(output, as_json), _batch_pairs(batch), batch)


@remote
def batches_delete(
    batch_id: str = typer.Argument(..., help="batch id (bat_...)"),
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Delete a finished batch with its documents, results, files, events (cancel a running one)."""
    with connect(url, api_key, profile) as api:
        api.request("DELETE", v1("batches", batch_id))
    print(f"deleted {batch_id}")


@remote
def documents_delete(
    document_id: str = typer.Argument(..., help="document id (doc_...)"),
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Delete a document of a finished batch with its result, files and events; its batch's
    counts and status follow."""
    with connect(url, api_key, profile) as api:
        api.request("DELETE", v1("documents", document_id))
    print(f"deleted {document_id}")


@remote
def projects_delete(
    project_id: str = typer.Argument(..., help="project id (prj_...)"),
    cascade: bool = typer.Option(
        False, "--cascade", help="also delete its batches (refused while any runs)"
    ),
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Delete a project; one with batches only with --cascade, which deletes them too."""
    with connect(url, api_key, profile) as api:
        query = {"cascade": "true"} if cascade else {}
        api.request("DELETE", v1("projects", project_id), params=query)
    print(f"deleted {project_id}")


PROJECT_FIELDS = (
    "id",
    "name",
    "description",
    "batch_count",
    "document_count",
    "retention_days",
    "created_at",
    "updated_at",
)


@remote
def projects_update(
    project_id: str = typer.Argument(..., help="project id (prj_...)"),
    name: str | None = typer.Option(None, "--name", help="a new name"),
    description: str | None = typer.Option(None, "--description", help="a new description"),
    retention_days: int | None = typer.Option(
        None,
        "--retention-days",
        help="delete its finished batches (documents, files, results) N days after creation",
    ),
    keep_forever: bool = typer.Option(
        False, "--keep-forever", help="no retention: keep its batches until deleted"
    ),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Change a project's name, description or retention."""
    if retention_days is not None and keep_forever:
        raise Refused("give --retention-days or --keep-forever, not both")
    body: dict[str, Any] = {"name": name, "description": description}
    body = {key: value for key, value in body.items() if value is not None}
    if retention_days is not None or keep_forever:
        body["retention_days"] = retention_days
    if not body:
        raise Refused(
            "nothing to change: give --name, --description, --retention-days or --keep-forever"
        )
    with connect(url, api_key, profile) as api:
        project = api.request("PATCH", v1("projects", project_id), json=body)
    pairs = [(key, project.get(key)) for key in PROJECT_FIELDS]
    print_object(chosen(output, as_json), pairs, project)


def result_rows(details: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """One row per document: its status and every scalar field's value (columns: the union of
    the fields' names, in the order first met; the table of `kit.results`, which the export
    endpoints share); line items are left to JSON."""
    names = results.field_names(details)
    return results.columns(names), [results.row(detail, names) for detail in details]


@remote
def batches_results(
    batch_id: str = typer.Argument(..., help="batch id (bat_...)"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """The extracted values of a batch's documents: one row per document, one column per field
    (csv for a spreadsheet); JSON gives each document with its whole result."""
    with connect(url, api_key, profile) as api:
        listed = list(api.pages(v1("batches", batch_id, "documents")))
        with ThreadPoolExecutor(READERS) as pool:  # each result is one document's GET
            details = list(pool.map(lambda d: api.get(v1("documents", d["id"])), listed))
    columns, rows = result_rows(details)
    data = [
        {key: detail.get(key) for key in ("id", "name", "status", "confidence", "error_code")}
        | {"result": detail.get("result")}
        for detail in details
    ]
    print_rows(chosen(output, as_json), columns, rows, data)


# --- documents -------------------------------------------------------------------------------


@remote
def documents_list(
    batch: str | None = typer.Option(
        None, "--batch", help="only this batch's documents, in creation order"
    ),
    status: str | None = typer.Option(None, "--status", help="only documents in this status"),
    project: str | None = typer.Option(None, "--project", help="only this project's documents"),
    workflow: str | None = typer.Option(None, "--workflow", help="only this workflow's"),
    limit: int = LimitOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """List documents: a batch's in creation order, else the tenant's newest first."""
    with connect(url, api_key, profile) as api:
        if batch is not None and project is None and workflow is None:
            found = api.pages(v1("batches", batch, "documents"), status=status)
        else:
            found = api.pages(
                "/v1/documents",
                status=status,
                batch_id=batch,
                project_id=project,
                workflow_id=workflow,
            )
        items = listed(found, limit, "documents")
    rows = [_document_row(d) for d in items]
    print_rows(chosen(output, as_json), DOCUMENT_COLUMNS, rows, items)


FIELD_COLUMNS = ("field", "value", "confidence", "page", "raw", "errors")


@remote
def documents_show(
    document_id: str = typer.Argument(..., help="document id (doc_...)"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Show a document and its extracted fields (JSON: with its whole result)."""
    with connect(url, api_key, profile) as api:
        document = api.get(v1("documents", document_id))
    fmt = chosen(output, as_json)
    keys = (
        "id",
        "name",
        "status",
        "confidence",
        "error_code",
        "error_reason",
        "batch_id",
        "content_type",
        "detected_type",
        "size",
        "sha256",
        "created_at",
        "completed_at",
    )
    pairs = [(key, document.get(key)) for key in keys]
    if fmt is not Output.table:
        print_object(fmt, pairs, document)
        return
    print_object(fmt, pairs, document)
    fields = (document.get("result") or {}).get("fields") or {}
    if fields:
        rows = [
            [
                name,
                field.get("value"),
                field.get("confidence"),
                field.get("page"),
                field.get("raw"),
                "; ".join(str(e) for e in field.get("errors") or []),
            ]
            for name, field in fields.items()
        ]
        print_rows(fmt, FIELD_COLUMNS, rows, fields)


def _target(out_path: str | None, default: str, force: bool) -> Path | None:
    """Where to write (None: stdout); refuses to replace a file unless `force`. A folder (one
    that exists, or a path ending in a separator, which is created) receives `default`."""
    if out_path == "-":
        return None
    name = Path(default).name or "document"
    if not out_path:
        target = Path(name)
    elif out_path.endswith(("/", os.sep)) or Path(out_path).is_dir():
        folder = Path(out_path)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / name
    else:
        target = Path(out_path)
    if target.exists() and not force:
        raise Refused(f"{target} exists; pass --force to replace it")
    return target


@remote
def documents_download(
    document_id: str = typer.Argument(..., help="document id (doc_...)"),
    out_path: str | None = typer.Option(
        None,
        "--out",
        help="file or folder to write to (a path ending in / is a folder, created if need be); "
        "- for stdout (default: the document's name, or <name>.json with --result, in the "
        "current folder)",
    ),
    result: bool = typer.Option(False, "--result", help="the result JSON, not the original file"),
    force: bool = typer.Option(False, "--force", help="replace a file that exists"),
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Download a document's original file, or with --result its extraction result as JSON."""
    with connect(url, api_key, profile) as api:
        document = api.get(v1("documents", document_id))
        name = str(document["name"])
        if result:
            if document.get("result") is None:
                raise Refused(f"document {document_id} has no result ({document['status']})")
            target = _target(out_path, f"{Path(name).stem or document_id}.json", force)
            text = json.dumps(document["result"], indent=2, ensure_ascii=False) + "\n"
            if target is None:
                sys.stdout.write(text)
                sys.stdout.flush()
                return
            target.write_text(text, encoding="utf-8")
        else:
            target = _target(out_path, name, force)
            if target is None:
                api.download(v1("documents", document_id, "file"), sys.stdout.buffer)
                sys.stdout.flush()
                return
            partial = target.with_name(f".{target.name}.part")
            try:
                with partial.open("wb") as handle:
                    api.download(v1("documents", document_id, "file"), handle)
                partial.replace(target)
            finally:
                partial.unlink(missing_ok=True)
    err().print(f"wrote {escape(str(target))}")


# --- workflows -------------------------------------------------------------------------------

WORKFLOW_COLUMNS = ("id", "name", "version", "project_id", "fields", "updated_at")


@remote
def workflows_list(
    project: str = typer.Option(..., "--project", help="project id (prj_...)"),
    limit: int = LimitOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """List a project's workflows (the latest version of each), most recently updated first."""
    with connect(url, api_key, profile) as api:
        items = listed(api.pages(v1("projects", project, "workflows")), limit, "workflows")
    rows = [
        [
            w["id"],
            w["name"],
            w["version"],
            w["project_id"],
            len((w.get("definition") or {}).get("fields") or []),
            w.get("updated_at"),
        ]
        for w in items
    ]
    print_rows(chosen(output, as_json), WORKFLOW_COLUMNS, rows, items)


@remote
def workflows_show(
    workflow_id: str = typer.Argument(..., help="workflow id (wfl_...)"),
    version: int | None = typer.Option(None, "--version", min=1, help="default: the latest"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Show a workflow version and its fields (JSON: with its whole definition)."""
    with connect(url, api_key, profile) as api:
        workflow = api.get(v1("workflows", workflow_id), version=version)
    fmt = chosen(output, as_json)
    definition = workflow.get("definition") or {}
    pairs = [
        ("id", workflow["id"]),
        ("name", workflow["name"]),
        ("version", workflow["version"]),
        ("project_id", workflow["project_id"]),
        ("description", definition.get("description")),
        ("confidence_threshold", definition.get("confidence_threshold")),
        ("review_threshold", definition.get("review_threshold")),
        ("created_at", workflow.get("created_at")),
        ("updated_at", workflow.get("updated_at")),
    ]
    print_object(fmt, pairs, workflow)
    if fmt is Output.table:
        rows = [
            [f.get("name"), f.get("type"), bool(f.get("required"))]
            for f in definition.get("fields") or []
        ]
        print_rows(fmt, ("field", "type", "required"), rows, rows)


TRUST_COLUMNS = (
    "field",
    "examples",
    "correct",
    "cut",
    "precision",
    "lower_bound",
    "automation_rate",
    "decided_by",
    "drifted_at",
)


def _figure(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


@remote
def workflows_trust(
    workflow_id: str = typer.Argument(..., help="workflow id (wfl_...)"),
    version: int | None = typer.Option(None, "--version", min=1, help="default: the latest"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
    url: str | None = UrlOption,
    api_key: str | None = KeyOption,
    profile: str | None = ProfileOption,
) -> None:
    """Show how far each field of a workflow version is trusted: its reviewed examples, the
    confidence cut it earned, the precision measured at that cut and the automation rate."""
    with connect(url, api_key, profile) as api:
        trust = api.get(v1("workflows", workflow_id, "trust"), version=version)
    fmt = chosen(output, as_json)
    items = trust.get("fields") or []
    if fmt is Output.table:
        pairs = [
            (key, trust.get(key))
            for key in ("workflow_id", "version", "target_precision", "qa_sample_rate")
        ]
        pairs += [("cold_start", trust.get("cold_start")), ("learning", trust.get("learning"))]
        print_object(fmt, pairs, trust)
    rows = [
        [
            f["name"],
            f["examples"],
            f["correct"],
            _figure(f.get("cut")),
            _figure(f.get("precision")),
            _figure(f.get("lower_bound")),
            _figure(f.get("automation_rate")),
            f.get("decided_by"),
            f.get("drifted_at") or "-",
        ]
        for f in items
    ]
    print_rows(fmt, TRUST_COLUMNS, rows, trust)


# The remote commands, by the root's group that holds them (beside the operator's commands of
# `batches`, `workflows` and `projects`; `documents` holds only remote ones).
REMOTE_COMMANDS: dict[str, dict[str, Callable[..., Any]]] = {
    "batches": {
        "submit": batches_submit,
        "list": batches_list,
        "show": batches_show,
        "results": batches_results,
        "cancel": batches_cancel,
        "delete": batches_delete,
    },
    "projects": {"delete": projects_delete, "update": projects_update},
    "workflows": {"list": workflows_list, "show": workflows_show, "trust": workflows_trust},
    "documents": {
        "list": documents_list,
        "show": documents_show,
        "download": documents_download,
        "delete": documents_delete,
    },
}


def mount(group: str, parent: typer.Typer) -> typer.Typer:
    """Add the remote commands of the root's `group` to `parent` (its operator commands, or an
    empty Typer when only a remote command is run); `parent` for chaining."""
    for name, command in REMOTE_COMMANDS[group].items():
        parent.command(name, rich_help_panel=REMOTE_PANEL, help=_help(command))(command)
    return parent


def _help(command: Callable[..., Any]) -> str:
    return (command.__doc__ or "").strip() + REMOTE_NOTE
