"""A stream evaluation: a labelled dataset submitted one document at a time, in file-name
order, through the HTTP API of a running service, each document reviewed from its label as a
diligent reviewer would.

For each document: a batch of one is created, the file uploaded, the batch followed until it
ends, the document read back and compared with its label. A document that ended
REVIEW_REQUIRED is claimed and reviewed: approved as it is when every labelled field counts
right (`stream_scoring.counts_right`), else approved with the wrong fields corrected to their
labelled values (line-item tables are not corrected: a review takes field values only). When
the service refuses the approval (a required field the label does not give), the document is
rejected. SUCCEEDED documents are not looked at; FAILED ones are counted.
"""

from __future__ import annotations

import mimetypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from docflow.client.remote import Api, ApiError, confirms_upload
from docflow.evaluation.dataset import LabelledDocument
from docflow.evaluation.runner import DocumentOutcome, EvalRun, compare_document
from docflow.evaluation.stream_scoring import StreamStep, counts_right
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.result import DocumentStatus, ExtractionResult, FieldResult, LineItemsResult

BATCH_TERMINAL = frozenset({"SUCCEEDED", "REVIEW_REQUIRED", "PARTIALLY_FAILED", "FAILED"})
DOCUMENT_SECONDS = 600.0
REVIEW_REASON = "stream evaluation: values checked against the label"

Progress = Callable[[int, int, StreamStep, float], None]


class StreamFailed(RuntimeError):
    """A document did not finish in time, or the service answered something unexpected."""


@dataclass(frozen=True, slots=True)
class StreamRun:
    run: EvalRun  # the extraction outcomes (statuses before review), for today's figures
    steps: tuple[StreamStep, ...]


def workflow_body(
    definition: ExtractionWorkflowDefinition, *, qa_sample_rate: float | None = None
) -> dict[str, Any]:
    """The body that creates the workflow; `qa_sample_rate` is written as the top-level key of
    that name when given (the service's schema decides whether it takes it)."""
    body: dict[str, Any] = definition.model_dump(mode="json", exclude_none=True)
    if qa_sample_rate is not None:
        body["qa_sample_rate"] = qa_sample_rate
    return body


def prepare(api: Api, body: dict[str, Any]) -> tuple[str, str]:
    """A project and the workflow `body` in it; their ids."""
    project = api.create("/v1/projects", {"name": "Stream evaluation"})
    workflow = api.create(f"/v1/projects/{project['id']}/workflows", body)
    return project["id"], workflow["id"]


def _content_type(document: LabelledDocument) -> str:
    guessed, _ = mimetypes.guess_type(document.path.name)
    return guessed or "application/octet-stream"


def submit(api: Api, project_id: str, workflow_id: str, document: LabelledDocument) -> str:
    """Create a batch of this one document and upload its file; the batch id."""
    declared = {
        "name": document.name,
        "content_type": _content_type(document),
        "size": document.path.stat().st_size,
    }
    body = {"project_id": project_id, "workflow_id": workflow_id, "documents": [declared]}
    batch = api.create("/v1/batches", body)
    target = batch["documents"][0]
    api.upload(target, document.path)
    if confirms_upload(target):
        api.request("POST", f"/v1/documents/{target['id']}/uploaded")
    return str(batch["id"])


def finished(api: Api, batch_id: str, *, timeout: float = DOCUMENT_SECONDS) -> dict[str, Any]:
    """The batch's only document, with its result, once the batch has ended."""
    deadline = time.monotonic() + timeout
    interval = 0.1
    while api.get(f"/v1/batches/{batch_id}")["status"] not in BATCH_TERMINAL:
        if time.monotonic() > deadline:
            raise StreamFailed(f"batch {batch_id} did not end within {timeout:.0f} s")
        time.sleep(interval)
        interval = min(interval * 1.5, 1.0)
    page = api.get(f"/v1/batches/{batch_id}/documents")
    detail: dict[str, Any] = api.get(f"/v1/documents/{page['items'][0]['id']}")
    return detail


def result_of(detail: dict[str, Any]) -> ExtractionResult | None:
    """The extraction result the API answered (only what comparing needs), None without one."""
    raw = detail.get("result")
    status = str(detail.get("status"))
    if not isinstance(raw, dict) or status not in DocumentStatus.__members__:
        return None
    fields = {
        name: FieldResult(name, f.get("value"), f.get("raw"), float(f.get("confidence") or 0.0))
        for name, f in (raw.get("fields") or {}).items()
        if isinstance(f, dict)
    }
    tables = {
        name: LineItemsResult(name, tuple(t.get("rows") or ()), float(t.get("confidence") or 0))
        for name, t in (raw.get("line_items") or {}).items()
        if isinstance(t, dict)
    }
    confidence = float(detail.get("confidence") or 0.0)
    return ExtractionResult(DocumentStatus(status), confidence, fields, tables)


def outcome_of(
    definition: ExtractionWorkflowDefinition,
    document: LabelledDocument,
    detail: dict[str, Any],
    seconds: float,
) -> DocumentOutcome:
    """The document compared with its label, as `docflow eval` compares an engine result."""
    result = result_of(detail)
    comparisons = compare_document(definition, document, result)
    if result is None or detail.get("status") not in DocumentStatus.__members__:
        reason = f"{detail.get('error_code')}: {detail.get('error_reason')}"
        return DocumentOutcome(document.name, DocumentStatus.FAILED, reason, comparisons, seconds)
    return DocumentOutcome(document.name, result.status, None, comparisons, seconds)


def wrong_fields(
    definition: ExtractionWorkflowDefinition, document: LabelledDocument, outcome: DocumentOutcome
) -> dict[str, str]:
    """The labelled value of every field that does not count right (line items left out)."""
    kinds = {f.name: f.type for f in definition.fields}
    return {
        c.field: document.fields[c.field]
        for c in outcome.comparisons
        if kinds[c.field] != FieldType.LINE_ITEMS and not counts_right(c, kinds[c.field])
    }


def review(api: Api, document_id: str, corrections: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    """Claim the document and approve it with `corrections`, or reject it when the service
    refuses the approval; the decision and the corrected fields the review recorded."""
    api.request("POST", f"/v1/documents/{document_id}/claim")
    body: dict[str, Any] = {"decision": "approve", "fields": corrections, "reason": REVIEW_REASON}
    try:
        answer = api.request("POST", f"/v1/documents/{document_id}/review", json=body)
    except ApiError as exc:
        if exc.status != 422:
            raise
        body = {"decision": "reject", "reason": f"{REVIEW_REASON}; not approvable: {exc.detail}"}
        answer = api.request("POST", f"/v1/documents/{document_id}/review", json=body)
    recorded = answer["review"]
    return recorded["decision"], tuple(f["field"] for f in recorded["fields"])


def step_of(definition: ExtractionWorkflowDefinition, outcome: DocumentOutcome) -> StreamStep:
    """The step of a document nobody reviewed (yet)."""
    kinds = {f.name: f.type for f in definition.fields}
    right = sum(counts_right(c, kinds[c.field]) for c in outcome.comparisons)
    return StreamStep(outcome.name, outcome.status, len(outcome.comparisons), right)


def run_stream(
    api: Api,
    definition: ExtractionWorkflowDefinition,
    documents: Sequence[LabelledDocument],
    *,
    body: dict[str, Any],
    progress: Progress | None = None,
) -> StreamRun:
    """Submit, follow, compare and review every document in turn."""
    project_id, workflow_id = prepare(api, body)
    outcomes: list[DocumentOutcome] = []
    steps: list[StreamStep] = []
    started = time.perf_counter()
    for index, document in enumerate(documents):
        began = time.perf_counter()
        detail = finished(api, submit(api, project_id, workflow_id, document))
        outcome = outcome_of(definition, document, detail, time.perf_counter() - began)
        step = step_of(definition, outcome)
        if outcome.status == DocumentStatus.REVIEW_REQUIRED:
            corrections = wrong_fields(definition, document, outcome)
            decision, corrected = review(api, detail["id"], corrections)
            step = StreamStep(
                step.name, step.status, step.labelled, step.right, True, decision, corrected
            )
        outcomes.append(outcome)
        steps.append(step)
        if progress is not None:
            progress(index + 1, len(documents), step, time.perf_counter() - began)
    wall = time.perf_counter() - started
    defined = {f.name for f in definition.fields}
    skipped = tuple(sorted({n for d in documents for n in d.fields if n not in defined}))
    return StreamRun(EvalRun(tuple(outcomes), wall, skipped), tuple(steps))
