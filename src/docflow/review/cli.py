"""`docflow review list|next|show|claim|release|approve|reject --tenant T`: the review queue
from the command line, as the operator acting for a tenant under a reviewer's name
(`--reviewer`, default `operator`). `approve` and `reject` take (or renew) the reviewer's claim
first, in the same transaction, unless someone else holds the document."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docflow.cli_operator import Operator, fail, open_operator
from docflow.client.output import JsonOption, Output, OutputOption, chosen, print_rows
from docflow.documents import service as documents
from docflow.documents.downstream import read_with_downstream
from docflow.documents.models import Document
from docflow.kit.clock import utcnow
from docflow.review import claims, service
from docflow.review.schemas import ClaimRead, ReviewRead

app = typer.Typer(
    help="Review documents: the queue, claims, approve or reject.", no_args_is_help=True
)

TENANT = typer.Option(..., "--tenant", help="tenant id (ten_...)")
REVIEWER = typer.Option("operator", "--reviewer", help="who reviews (recorded in the audit)")
DOCUMENT = typer.Argument(..., help="document id (doc_...)")


def _out() -> Console:
    return Console(soft_wrap=True)


def _fields(values: list[str]) -> dict[str, str | None]:
    fields: dict[str, str | None] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise fail(f"--field takes name=value, got {item!r}", code=2)
        fields[name.strip()] = value
    return fields


def _reasons(document: Document) -> str:
    result = document.result or {}
    return "; ".join(str(r) for r in result.get("reasons") or [])


REVIEW_COLUMNS = ("document", "name", "batch", "confidence", "why")
FIELD_COLUMNS = ("field", "value", "confidence", "read as")


@app.command("list")
def list_command(
    tenant: str = TENANT,
    project: str | None = typer.Option(None, "--project", help="only this project's"),
    field: str | None = typer.Option(None, "--field", help="only those where this field is weak"),
    limit: int = typer.Option(50, "--limit", min=1, max=200),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """List the documents awaiting review, newest first."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        page = documents.query_documents(
            session,
            operator.tenant(tenant),
            status="REVIEW_REQUIRED",
            project_id=project,
            field=field,
            cursor=None,
            limit=limit,
        )
        rows = [
            [
                d.id,
                d.name,
                d.batch_id,
                f"{d.confidence:.2f}" if d.confidence is not None else "",
                _reasons(d),
            ]
            for d in page.items
        ]
        read = read_with_downstream(
            session,
            tenant,
            page.items,
            lag_seconds=operator.settings.downstream_lag_seconds,
            now=utcnow(),
        )
        data = [d.model_dump(mode="json") for d in read]
    print_rows(chosen(output, as_json), REVIEW_COLUMNS, rows, data)


@app.command("next")
def next_command(
    tenant: str = TENANT,
    reviewer: str = REVIEWER,
    project: str | None = typer.Option(None, "--project", help="only this project's"),
) -> None:
    """Claim the document that has waited longest for review and show it."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        claimed = claims.next_document(
            session,
            operator.tenant(tenant),
            reviewer=reviewer,
            project_id=project,
            now=utcnow(),
            lease_seconds=operator.settings.review_claim_seconds,
        )
        if claimed is None:
            _out().print("no document is waiting for review")
            return
        _show(operator, session, tenant, claimed.document.id)


@app.command("show")
def show_command(
    document_id: str = DOCUMENT,
    tenant: str = TENANT,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """Show a document's fields, why it needs review, its claim and its reviews (JSON: the
    document, its fields, claim and reviews; CSV: its fields)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        _show(operator, session, tenant, document_id, chosen(output, as_json))


def _field_rows(result: dict[str, Any] | None) -> list[list[Any]]:
    rows = []
    for name, field in ((result or {}).get("fields") or {}).items():
        confidence = field.get("confidence")
        rows.append(
            [
                name,
                str(field.get("value") or ""),
                f"{confidence:.2f}" if isinstance(confidence, int | float) else "",
                str(field.get("raw") or ""),
            ]
        )
    return rows


def _show(
    operator: Operator,
    session: Any,
    tenant: str,
    document_id: str,
    output: Output = Output.table,
) -> None:
    context = operator.tenant(tenant)
    document = documents.get_document(session, context, document_id=document_id)
    storage = operator.storage()
    result = documents.document_result(
        storage, document, max_bytes=operator.settings.max_document_bytes
    )
    claim = claims.current_claim(session, context, document_id=document_id, now=utcnow())
    trail = service.list_reviews(session, context, document_id=document_id, cursor=None, limit=200)
    if output is not Output.table:
        held = None if claim is None else ClaimRead.model_validate(claim).model_dump(mode="json")
        data = {
            "document": read_with_downstream(
                session,
                tenant,
                [document],
                lag_seconds=operator.settings.downstream_lag_seconds,
                now=utcnow(),
            )[0].model_dump(mode="json"),
            "fields": (result or {}).get("fields") or {},
            "claim": held,
            "reviews": [ReviewRead.of(r).model_dump(mode="json") for r in trail.items],
        }
        print_rows(output, FIELD_COLUMNS, _field_rows(result), data)
        return
    out = _out()
    reviewed = " (reviewed)" if document.reviewed_at is not None else ""
    out.print(f"{document.id} {escape(document.name)}: {document.status}{reviewed}")
    if reasons := _reasons(document):
        out.print(f"why: {escape(reasons)}")
    if claim is not None:
        out.print(f"claimed by {escape(claim.reviewer)} until {claim.expires_at:%H:%M:%S} UTC")
    table = Table(*FIELD_COLUMNS)
    for row in _field_rows(result):
        table.add_row(*(escape(value) for value in row))
    out.print(table)
    for recorded in trail.items:
        r = recorded.review
        changes = ", ".join(
            f"{f.field}: {f.original_value!r} -> {f.corrected_value!r}" for f in recorded.fields
        )
        out.print(
            f"{r.created_at:%Y-%m-%d %H:%M:%S} {escape(r.reviewer)} {r.decision} "
            f"{escape(changes)} {escape(r.reason)}".rstrip()
        )


@app.command("claim")
def claim_command(
    document_id: str = DOCUMENT, tenant: str = TENANT, reviewer: str = REVIEWER
) -> None:
    """Claim a document for the reviewer (or renew their claim)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        claim = claims.claim_document(
            session,
            operator.tenant(tenant),
            document_id=document_id,
            reviewer=reviewer,
            now=utcnow(),
            lease_seconds=operator.settings.review_claim_seconds,
        )
        _out().print(
            f"{document_id} claimed by {escape(reviewer)} until {claim.expires_at:%H:%M:%S} UTC"
        )


@app.command("release")
def release_command(
    document_id: str = DOCUMENT, tenant: str = TENANT, reviewer: str = REVIEWER
) -> None:
    """Release the reviewer's claim on a document."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        claims.release_claim(
            session,
            operator.tenant(tenant),
            document_id=document_id,
            reviewer=reviewer,
            now=utcnow(),
        )
    _out().print(f"{document_id} released")


_DONE = {"approve": "approved", "reject": "rejected"}


def _decide(
    document_id: str, tenant: str, reviewer: str, decision: str, fields: list[str], reason: str
) -> None:
    values = _fields(fields)
    with open_operator() as operator, operator.transaction(tenant) as session:
        context, now = operator.tenant(tenant), utcnow()
        lease = operator.settings.review_claim_seconds
        claims.claim_document(
            session,
            context,
            document_id=document_id,
            reviewer=reviewer,
            now=now,
            lease_seconds=lease,
        )
        recorded = service.review_document(
            session,
            context,
            operator.storage(),
            document_id=document_id,
            reviewer=reviewer,
            review=service.ReviewInput(values, decision, reason),
            now=now,
            max_result_bytes=operator.settings.max_document_bytes,
        )
    corrected = ", ".join(f"{f.field}={f.corrected_value}" for f in recorded.fields)
    status = recorded.review.status_after
    _out().print(
        f"{document_id} {_DONE[decision]}: {status}"
        + (f" ({escape(corrected)})" if corrected else "")
    )


FIELD = typer.Option([], "--field", help="a corrected value, name=value (repeatable)")


@app.command("approve")
def approve_command(
    document_id: str = DOCUMENT,
    tenant: str = TENANT,
    reviewer: str = REVIEWER,
    field: list[str] = FIELD,
    reason: str = typer.Option("", "--reason", help="why (kept in the audit)"),
) -> None:
    """Approve a document (SUCCEEDED), with corrected values."""
    _decide(document_id, tenant, reviewer, "approve", field, reason)


@app.command("reject")
def reject_command(
    document_id: str = DOCUMENT,
    tenant: str = TENANT,
    reviewer: str = REVIEWER,
    field: list[str] = FIELD,
    reason: str = typer.Option(..., "--reason", help="why (kept in the audit)"),
) -> None:
    """Reject a document (FAILED `rejected_in_review`)."""
    _decide(document_id, tenant, reviewer, "reject", field, reason)
