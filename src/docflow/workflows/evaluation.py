"""Measure a workflow version on the workflow's reviewed documents, side by side with another.

Every reviewed document that stands approved is a labelled example (`docflow.review.examples`).
`evaluate_candidate` runs the extraction engine over the stored files of the workflow's most
recently reviewed documents twice, once with the version measured against (the current one by
default) and once with a candidate definition, and compares both with the truth field by field
(`docflow.evaluation.compare.compare_value`, the one comparison every evaluation uses).

Cost is bounded, because the engine runs inside an API request (a sync endpoint: FastAPI runs
it in its threadpool, never on the event loop): at most `max_documents` documents, a wall-time
budget (`seconds`) after which no further document starts (the answer says how many were left
out), the engine's own limits per page (`EngineLimits`), and `concurrency` evaluations per
process at once (another waits `BUSY_WAIT_SECONDS`, then `evaluation_busy`, 429). The database
is read in one short session before the engine runs, so no connection or lock is held while it
does. Both versions always run on the same documents, so a budget that cuts the run short
still compares like with like.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

import structlog
from sqlalchemy.orm import Session

from docflow.errors import DomainError, LimitExceeded, NotFound
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.errors import Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.base import OcrEngine
from docflow.extraction.pipeline import extract_document
from docflow.review.examples import LabelledDocument, reviewed_documents
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext
from docflow.workflows.accuracy import (
    Evaluation,
    Found,
    Run,
    Skipped,
    require_no_regression,
    score,
)
from docflow.workflows.service import WorkflowView, get_workflow, update_workflow

log = structlog.get_logger(__name__)

BUSY_WAIT_SECONDS = 5.0
NO_DOCUMENTS = (
    "the workflow has no reviewed documents yet: approve documents in review to measure "
    "versions on them"
)


class EvaluationBusy(DomainError):
    code = "evaluation_busy"
    status = 429
    title = "Too many requests"


@dataclass(frozen=True, slots=True)
class ReadingEngines:
    """The OCR engines and limits the evaluation runs the engine with."""

    ocr: OcrEngine
    second_ocr: OcrEngine | None
    limits: EngineLimits


def local_engines(
    limits: EngineLimits, *, ppocr_det_side: int, ppocr_threads: int
) -> Callable[[], ReadingEngines]:
    """Engines of the process's own, loaded on first use and kept: one Tesseract and one
    PP-OCR page at a time (for a process that runs no document workers: an API-only process,
    the command line)."""
    lock = threading.Lock()
    loaded: list[ReadingEngines] = []

    def engines() -> ReadingEngines:
        with lock:
            if not loaded:
                from docflow.extraction.ocr import default_engine, ppocr_engine

                second = ppocr_engine(det_side=ppocr_det_side, threads=ppocr_threads, max_engines=1)
                loaded.append(ReadingEngines(default_engine(max_engines=1), second, limits))
            return loaded[0]

    return engines


@dataclass(frozen=True)
class Evaluator:
    """What an evaluation may spend, and where its engines come from (built by the
    composition root from the settings; `engines` is called when a document is to be read)."""

    engines: Callable[[], ReadingEngines]
    max_documents: int
    seconds: float
    max_document_bytes: int
    max_result_bytes: int
    concurrency: int = 1
    _gate: threading.BoundedSemaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_gate", threading.BoundedSemaphore(self.concurrency))

    @contextmanager
    def slot(self) -> Iterator[None]:
        if not self._gate.acquire(timeout=BUSY_WAIT_SECONDS):
            raise EvaluationBusy("another evaluation is running: retry in a moment")
        try:
            yield
        finally:
            self._gate.release()


def _cannot_run(baseline: WorkflowView) -> str | None:
    if baseline.problem is None:
        return None
    return (
        f"version {baseline.version} cannot run ({baseline.problem}): "
        "none of its values count as found"
    )


def _scored(
    plan: _Plan,
    candidate: ExtractionWorkflowDefinition,
    runs: list[Run],
    skipped: tuple[Skipped, ...],
    note: str | None,
) -> Evaluation:
    baseline = plan.baseline
    return score(baseline.id, baseline.version, baseline.definition, candidate, runs, skipped, note)


@dataclass(frozen=True, slots=True)
class _Plan:
    baseline: WorkflowView
    examples: list[LabelledDocument]


def evaluate_candidate(
    sessions: Callable[[], AbstractContextManager[Session]],
    tenant: TenantContext,
    storage: Storage,
    evaluator: Evaluator,
    *,
    workflow_id: str,
    candidate: ExtractionWorkflowDefinition,
    against_version: int | None = None,
) -> Evaluation:
    """Run `candidate` and the version `against_version` (default: the current one) over the
    workflow's reviewed documents and score both (see the module docstring). `sessions` opens
    a session bound to the tenant; it is used once, briefly, before the engine runs. NotFound
    for a missing workflow or version, or another tenant's; `evaluation_busy` (429) when the
    process already runs as many evaluations as it may."""
    with sessions() as session:
        baseline = get_workflow(session, tenant, workflow_id=workflow_id, version=against_version)
        examples = reviewed_documents(
            session,
            tenant,
            storage,
            workflow_id=workflow_id,
            limit=evaluator.max_documents,
            max_result_bytes=evaluator.max_result_bytes,
        )
    plan = _Plan(baseline, examples)
    if not examples:
        return _scored(plan, candidate, [], (), NO_DOCUMENTS)
    with evaluator.slot():
        started = time.monotonic()
        runs, skipped = _run(plan, candidate, storage, evaluator)
    log.info(
        "workflow.evaluated",
        tenant_id=tenant.tenant_id,
        workflow_id=workflow_id,
        documents=len(runs),
        skipped=len(skipped),
        seconds=round(time.monotonic() - started, 3),
    )
    return _scored(plan, candidate, runs, tuple(skipped), _cannot_run(baseline))


def _run(
    plan: _Plan,
    candidate: ExtractionWorkflowDefinition,
    storage: Storage,
    evaluator: Evaluator,
) -> tuple[list[Run], list[Skipped]]:
    deadline = time.monotonic() + evaluator.seconds
    runs: list[Run] = []
    skipped: list[Skipped] = []
    engines: ReadingEngines | None = None
    for example in plan.examples:
        if time.monotonic() >= deadline:
            skipped.append(Skipped(example.document_id, "time_budget"))
            continue
        if example.storage_key is None:
            skipped.append(Skipped(example.document_id, "file_missing"))
            continue
        try:
            data = storage.read_bytes(example.storage_key, max_bytes=evaluator.max_document_bytes)
        except (NotFound, LimitExceeded):
            skipped.append(Skipped(example.document_id, "file_missing"))
            continue
        engines = engines or evaluator.engines()
        current = (
            {}
            if plan.baseline.problem is not None  # a stored version the engine refuses
            else _extract(data, plan.baseline.definition, engines)
        )
        runs.append((example, current, _extract(data, candidate, engines)))
    return runs, skipped


def _extract(
    data: bytes, definition: ExtractionWorkflowDefinition, engines: ReadingEngines
) -> Found:
    outcome = extract_document(
        data,
        definition,
        ocr=engines.ocr,
        second_ocr=engines.second_ocr,
        limits=engines.limits,
    )
    return {} if isinstance(outcome, Rejected) else outcome.values()


def update_without_regression(
    session: Session,
    sessions: Callable[[], AbstractContextManager[Session]],
    tenant: TenantContext,
    storage: Storage,
    evaluator: Evaluator,
    *,
    workflow_id: str,
    definition: ExtractionWorkflowDefinition,
    published_by: str | None = None,
) -> tuple[WorkflowView, Evaluation]:
    """Publish `definition` as the workflow's next version only if it loses no accuracy on
    the reviewed documents against the current version (`evaluate_candidate`, then
    `require_no_regression`); with no reviewed documents it is published. Conflict when
    another version was published while this one was measured."""
    evaluation = evaluate_candidate(
        sessions, tenant, storage, evaluator, workflow_id=workflow_id, candidate=definition
    )
    require_no_regression(evaluation)
    view = update_workflow(
        session,
        tenant,
        workflow_id=workflow_id,
        definition=definition,
        expected_version=evaluation.current_version,
        published_by=published_by,
    )
    return view, evaluation
