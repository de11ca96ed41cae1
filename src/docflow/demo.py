"""The demo a new user runs first: a real batch through the real HTTP API, end to end.

`prepare_tenant` creates a tenant and an API key in the configured database (as
`docflow tenants create` does); everything after goes through HTTP exactly as an integrator
would: a project, the invoice and receipt workflows of `examples/` (and a stricter copy of the
receipt one, whose documents wait for review), one batch per workflow with generated documents
(text PDFs and scanned images from `docflow.corpus`), each file PUT to its signed upload URL,
the status URLs polled under a live progress bar, the extracted fields, confidences and
statuses printed as a table, and how to review a document left in review.
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.orm import Session

from docflow.client.remote import confirms_upload, send_upload, upload_landed
from docflow.corpus.generate import make_document
from docflow.corpus.scan import LEVELS, scan
from docflow.extraction.workflow_file import load_workflow_file
from docflow.tenants import passwords
from docflow.tenants import service as tenants_service

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
TERMINAL = {"SUCCEEDED", "REVIEW_REQUIRED", "PARTIALLY_FAILED", "FAILED"}
DEMO_SEED = 2026
SCAN_DPI = 200
RETRIES = 10
# corpus layouts by index: 0-3 invoices (classic, european, minimal, modern), 4-6 receipts.
INVOICES = ((0, "pdf"), (1, "pdf"), (2, "pdf"), (3, "scan"))
RECEIPTS = ((4, "pdf"), (5, "scan"), (6, "pdf"))
# Receipts read under a stricter copy of the receipt workflow (`REVIEW_THRESHOLD`): values the
# receipt workflow accepts (about 0.9) now wait for a person, so the demo shows the review queue.
REVIEWED_RECEIPTS = ((4, "pdf"), (6, "pdf"))
REVIEW_THRESHOLD = 0.95
# A new workflow sends its documents to review until reviews have measured its fields
# (docs/accuracy.md, earned trust). The demo's invoice and receipt workflows are decided by
# their thresholds until then, so a fresh installation shows documents passing; the strict
# receipt one keeps the default and waits for review.
COLD_START_NOTE = (
    "the invoice and receipt workflows run with cold_start: thresholds (decided by "
    "review_threshold until reviews measure their fields); a workflow without it sends its "
    "documents to review until each field has earned trust: docflow workflows trust WFL"
)
DEMO_EMAIL = "demo@example.com"


class DemoFailed(RuntimeError):
    """The demo could not complete (an HTTP error, or batches that did not finish in time)."""


@dataclass(frozen=True)
class DemoFile:
    name: str
    content_type: str
    data: bytes


@dataclass
class DemoBatch:
    workflow: str
    batch_id: str
    status_url: str
    document_count: int
    status: str = "CREATED"
    done: int = 0
    documents: list[dict[str, Any]] = field(default_factory=list)


def demo_files(spec: tuple[tuple[int, str], ...]) -> list[DemoFile]:
    """Generated documents (deterministic): a text PDF, or a scan of it as a JPEG."""
    files = []
    for index, kind in spec:
        document = make_document(DEMO_SEED, index)
        if kind == "pdf":
            files.append(DemoFile(f"{document.name}.pdf", "application/pdf", document.pdf))
            continue
        rng = np.random.default_rng(DEMO_SEED + index)
        data = scan(document.pdf, dpi=SCAN_DPI, level=LEVELS["mild"], rng=rng)
        files.append(DemoFile(f"{document.name}-scan.jpg", "image/jpeg", data))
    return files


@dataclass(frozen=True)
class DemoTenant:
    tenant_id: str
    token: str
    # The console's demo user (an admin of the tenant) and the password made for this run.
    email: str = DEMO_EMAIL
    password: str = ""

    def console_lines(self, base_url: str) -> list[str]:
        """Where the console is and how to sign in to it."""
        return [
            f"the web console: {base_url}/console",
            f"  sign in as {self.email} with the password {self.password}",
        ]


def prepare_tenant(session: Session, *, name: str = "Demo Company") -> DemoTenant:
    """Create the demo tenant, an API key with every scope, and make the demo user an admin of
    it with a new password (in the caller's transaction). The demo user is the same person in
    every demo tenant of a database: the console lets them choose one."""
    tenant = tenants_service.create_tenant(session, name=name)
    _, token = tenants_service.create_api_key(session, tenant.id, name="demo", scopes=["*"])
    member = tenants_service.invite_user(
        session, tenant.id, email=DEMO_EMAIL, role=tenants_service.ADMIN, name="Demo User"
    )
    password = secrets.token_urlsafe(9)
    passwords.set_password(session, tenant.id, user_id=member.user_id, password=password)
    return DemoTenant(tenant_id=tenant.id, token=token, password=password)


def _call(client: httpx.Client, method: str, url: str, expect: int, **kwargs: Any) -> Any:
    """One API call, as a careful integrator makes it: a creating POST carries an
    Idempotency-Key, and a 503 (busy database) is retried after its Retry-After."""
    headers = dict(kwargs.pop("headers", None) or {})
    if method == "POST":
        headers["Idempotency-Key"] = f"demo-{uuid.uuid4()}"
    for _ in range(RETRIES):
        response = client.request(method, url, headers=headers, **kwargs)
        if response.status_code != 503:
            break
        time.sleep(float(response.headers.get("Retry-After", "1")))
    if response.status_code != expect:
        raise DemoFailed(f"{method} {url} answered {response.status_code}: {response.text}")
    return response.json()


def _workflow_body(name: str) -> dict[str, Any]:
    if name == "strict receipt":
        strict = _workflow_body("receipt")
        del strict["cold_start"]
        return {**strict, "name": name, "review_threshold": REVIEW_THRESHOLD}
    definition = load_workflow_file(EXAMPLES_DIR / f"{name}.yaml")
    body: dict[str, Any] = definition.model_dump(mode="json", exclude_none=True)
    return {**body, "cold_start": "thresholds"}


def submit_batches(client: httpx.Client, uploader: httpx.Client) -> list[DemoBatch]:
    """Create the project, both workflows and one batch per workflow, and upload every file."""
    project = _call(client, "POST", "/v1/projects", 201, json={"name": "Demo"})
    batches = []
    for name, spec in (
        ("invoice", INVOICES),
        ("receipt", RECEIPTS),
        ("strict receipt", REVIEWED_RECEIPTS),
    ):
        workflow = _call(
            client,
            "POST",
            f"/v1/projects/{project['id']}/workflows",
            201,
            json=_workflow_body(name),
        )
        files = demo_files(spec)
        declared = [
            {"name": f.name, "content_type": f.content_type, "size": len(f.data)} for f in files
        ]
        body = {"project_id": project["id"], "workflow_id": workflow["id"], "documents": declared}
        batch = _call(client, "POST", "/v1/batches", 202, json=body)
        for target, file in zip(batch["documents"], files, strict=True):
            upload(uploader, target, file)
            if confirms_upload(target):  # straight to S3: recorded now, not at the next minute
                _call(client, "POST", f"/v1/documents/{target['id']}/uploaded", 200)
        batches.append(DemoBatch(name, batch["id"], batch["status_url"], len(files)))
    return batches


def upload(uploader: httpx.Client, document: dict[str, Any], file: DemoFile) -> None:
    """Send a file to its document's upload target with a client that sends no API key (a
    presigned S3 form would refuse one)."""
    answer = send_upload(uploader, document, file.data, filename=file.name)
    if not upload_landed(answer):
        raise DemoFailed(f"upload of {file.name} answered {answer.status_code}: {answer.text}")


def _refresh(client: httpx.Client, batch: DemoBatch) -> None:
    state = _call(client, "GET", batch.status_url, 200)
    batch.status = state["status"]
    batch.done = state["succeeded_count"] + state["review_count"] + state["failed_count"]


def follow(
    client: httpx.Client, batches: list[DemoBatch], console: Console, *, timeout: float
) -> None:
    """Poll every batch's status URL under a live progress bar until all are terminal."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
    )
    deadline = time.monotonic() + timeout
    with Progress(*columns, console=console) as progress:
        tasks = {
            b.batch_id: progress.add_task(f"{b.workflow} batch", total=b.document_count, status="")
            for b in batches
        }
        while True:
            for batch in batches:
                _refresh(client, batch)
                progress.update(
                    tasks[batch.batch_id], completed=batch.done, status=batch.status.lower()
                )
            if all(b.status in TERMINAL for b in batches):
                return
            if time.monotonic() > deadline:
                raise DemoFailed(f"the demo batches did not finish within {timeout:.0f} s")
            time.sleep(0.25)


def collect_results(client: httpx.Client, batches: list[DemoBatch]) -> None:
    """Read every document of every batch, with its extraction result."""
    for batch in batches:
        page = _call(client, "GET", f"/v1/batches/{batch.batch_id}/documents", 200)
        batch.documents = [
            _call(client, "GET", f"/v1/documents/{d['id']}", 200) for d in page["items"]
        ]


def _field_cells(document: dict[str, Any]) -> str:
    result = document.get("result") or {}
    lines = []
    for name, found in (result.get("fields") or {}).items():
        if isinstance(found, dict) and found.get("value") not in (None, ""):
            score = f"{found['confidence']:.2f}" if "confidence" in found else ""
            reading = str(found.get("reading") or "")
            detail = ", ".join(escape(part) for part in (score, reading) if part)
            detail = f" ({detail})" if detail else ""
            lines.append(f"{escape(name)}: {escape(str(found['value']))}{detail}")
    for name, items in (result.get("line_items") or {}).items():
        if isinstance(items, dict) and items.get("rows"):
            lines.append(f"{escape(name)}: {len(items['rows'])} rows")
    if document.get("error_code"):
        lines.append(f"[red]{escape(document['error_code'])}[/red]")
    return "\n".join(lines)


def results_table(batches: list[DemoBatch]) -> Table:
    table = Table(
        "batch", "document", "status", "confidence", "extracted fields (confidence, reading)"
    )
    for batch in batches:
        for document in batch.documents:
            confidence = document.get("confidence")
            table.add_row(
                f"{batch.workflow}\n{batch.status}",
                escape(document["name"]),
                document["status"],
                f"{confidence:.2f}" if confidence is not None else "",
                _field_cells(document),
            )
    return table


def _weak_field(document: dict[str, Any]) -> tuple[str, str]:
    """The first field the document's review is about, and a value to suggest for it."""
    result = document.get("result") or {}
    reasons = [str(r) for r in result.get("reasons") or []]
    name = reasons[0].split(":", 1)[0] if reasons else "total"
    found = (result.get("fields") or {}).get(name) or {}
    return name, str(found.get("value") or found.get("raw") or "...")


def review_hint(batches: list[DemoBatch], tenant_id: str, base_url: str) -> list[str]:
    """How to review one of the documents left in review (CLI and HTTP), or where the queue
    is when none was."""
    waiting = [d for b in batches for d in b.documents if d["status"] == "REVIEW_REQUIRED"]
    if not waiting:
        return [f"no document needs review; the queue: docflow review list --tenant {tenant_id}"]
    document = waiting[0]["id"]
    name, value = _weak_field(waiting[0])
    return [
        f"{len(waiting)} document(s) await review; see why and what was read:",
        f"  docflow review show {document} --tenant {tenant_id}",
        "correct and approve it (or reject it with --reason):",
        f"  docflow review approve {document} --tenant {tenant_id} --reviewer you "
        f"--field '{name}={value}' --reason 'checked'",
        f"over HTTP: POST {base_url}/v1/documents/{document}/claim, then POST .../review",
    ]


def next_steps(batches: list[DemoBatch], tenant_id: str) -> list[str]:
    """The demo's tenant, and what to try next on its first batch from the command line."""
    batch = batches[0].batch_id if batches else "BAT"
    return [
        f"demo tenant {tenant_id}: operator commands take --tenant {tenant_id}",
        "next, from the command line (`docflow` is .venv/bin/docflow; "
        "`source .venv/bin/activate` puts it on PATH):",
        f"  docflow inspect batch {batch} --tenant {tenant_id}   # every step of its execution",
        f"  docflow tenants show {tenant_id}",
        f"  docflow batches results {batch} --output csv   # remote: needs DOCFLOW_URL and "
        "DOCFLOW_API_KEY",
    ]


def run_demo(
    base_url: str,
    token: str,
    console: Console,
    *,
    timeout: float = 300.0,
    tenant_id: str | None = None,
) -> list[DemoBatch]:
    """Run the demo against the API at `base_url` with a tenant's API key; the batches. With
    the key's `tenant_id`, it ends with how to review a document left in review."""
    headers = {"Authorization": f"Bearer {token}"}
    with (
        httpx.Client(base_url=base_url, headers=headers, timeout=60.0) as client,
        httpx.Client(timeout=60.0) as uploader,
    ):
        console.print(f"submitting demo documents to {escape(base_url)} ...")
        batches = submit_batches(client, uploader)
        follow(client, batches, console, timeout=timeout)
        collect_results(client, batches)
    console.print(results_table(batches))
    for batch in batches:
        console.print(
            f"{batch.workflow} batch {batch.batch_id}: {batch.status}; every step of it: "
            f"GET {escape(base_url)}/v1/batches/{batch.batch_id}/history"
        )
    console.print(escape(COLD_START_NOTE))
    if tenant_id is not None:
        for line in (*next_steps(batches, tenant_id), *review_hint(batches, tenant_id, base_url)):
            console.print(escape(line))
    return batches
