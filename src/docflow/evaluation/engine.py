"""Evaluate a workflow on a dataset with the real extraction engine."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from docflow.evaluation.dataset import load_dataset
from docflow.evaluation.runner import EvalRun, Extract, ExtractFactory, run_evaluation
from docflow.evaluation.scoring import Scores, score
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.errors import Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr import default_engine, ppocr_engine
from docflow.extraction.pipeline import extract_document
from docflow.extraction.result import ExtractionResult
from docflow.extraction.workflow_file import load_workflow_file


@dataclass(frozen=True, slots=True)
class Evaluation:
    definition: ExtractionWorkflowDefinition
    run: EvalRun
    scores: Scores


def engine_factory(definition: ExtractionWorkflowDefinition) -> ExtractFactory:
    """Extract functions backed by the engine, each with its own Tesseract engine (one per
    thread), sharing one PP-OCR engine (the second tier, which `definition.reading` chooses).

    The reader serialises its PDFium calls, so documents of any kind may run in parallel.
    """
    limits = EngineLimits()
    second_ocr = ppocr_engine()  # one model set for every thread, loaded on its first page

    def make() -> Extract:
        ocr = default_engine()

        def extract(data: bytes) -> ExtractionResult | Rejected:
            return extract_document(data, definition, ocr=ocr, second_ocr=second_ocr, limits=limits)

        return extract

    return make


def default_workers() -> int:
    return os.cpu_count() or 1


def evaluate(
    workflow: Path, dataset: Path, *, limit: int | None = None, workers: int | None = None
) -> Evaluation:
    """Load the workflow file and the labelled dataset, run the engine, score the run."""
    definition = load_workflow_file(workflow)
    documents = load_dataset(dataset, limit=limit)
    run = run_evaluation(
        definition, documents, engine_factory(definition), workers=workers or default_workers()
    )
    return Evaluation(definition, run, score(run, [f.name for f in definition.fields]))
