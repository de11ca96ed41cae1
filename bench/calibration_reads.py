"""Read the calibration sets once and keep the pages, so fitting runs on the same OCR text.

`bench.calibration` calls it before fitting (its `--cache DIR`).

The generated corpora of `bench.accuracy` (text PDFs; scans at 300 dpi mild, medium, hard and
200 dpi mild) and the real sets (sroie-dev, invoice2data) are read with the production OCR
engine; each set lands in `DIR/<set>.pickle` as a list of `Read` (document name, workflow,
labels, the read pages or the rejection). A set already in DIR is not read again: OCR of a loaded
machine is not exactly repeatable, so fitting and checking work on one reading.
"""

from __future__ import annotations

import pickle
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.accuracy import CORPORA, REAL, split_by_workflow
from docflow.corpus.generate import generate_corpus
from docflow.evaluation.dataset import LabelledDocument, load_dataset
from docflow.extraction.errors import Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import ReadDocument
from docflow.extraction.ocr import default_engine
from docflow.extraction.readers import read_document


@dataclass(frozen=True, slots=True)
class Read:
    name: str
    workflow: str
    fields: dict[str, str]
    document: ReadDocument | Rejected


def read_folder(folder: Path, workflow: str, workers: int) -> list[Read]:
    """Every labelled document of `folder`, read with one OCR engine (at most `workers` busy)."""
    documents = load_dataset(folder)
    ocr = default_engine(max_engines=workers)
    limits = EngineLimits()

    def one(document: LabelledDocument) -> Read:
        read = read_document(document.path.read_bytes(), ocr=ocr, limits=limits)
        return Read(document.name, workflow, document.fields, read)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, documents))


def set_names() -> list[str]:
    return [*CORPORA, *REAL]


def load_set(cache: Path, name: str) -> list[Read]:
    with (cache / f"{name.replace(' ', '-')}.pickle").open("rb") as handle:
        rows = pickle.load(handle)  # our own cache file
    return [Read(*row) for row in rows]


def read_sets(cache: Path, *, count: int, seed: int, eval_dir: Path, workers: int) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    for name in set_names():
        target = cache / f"{name.replace(' ', '-')}.pickle"
        if target.exists():
            continue
        reads: list[Read] = []
        if name in REAL:
            if (eval_dir / name).is_dir():
                reads = read_folder(eval_dir / name, REAL[name], workers)
        else:
            kinds, dpi, level = CORPORA[name]
            with tempfile.TemporaryDirectory(prefix="docflow-calibration-") as tmp:
                folder = Path(tmp) / "set"
                generate_corpus(
                    folder, count=count, seed=seed, kinds=kinds, dpi=dpi, degradation=level
                )
                for workflow, subset in split_by_workflow(folder).items():
                    reads += read_folder(subset, workflow, workers)
        # plain tuples, so the file loads whichever module runs as the script
        target.write_bytes(
            pickle.dumps([(r.name, r.workflow, r.fields, r.document) for r in reads])
        )
        print(f"read {name}: {len(reads)} documents", flush=True)
