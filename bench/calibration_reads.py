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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.accuracy import CORPORA, REAL, split_by_workflow
from docflow.corpus.generate import generate_corpus
from docflow.evaluation.dataset import LabelledDocument, load_dataset
from docflow.extraction.errors import Rejected
from docflow.extraction.limits import EngineLimits
from docflow.extraction.model import ReadDocument
from docflow.extraction.ocr import OcrEngine, default_engine, ppocr_engine
from docflow.extraction.readers import read_document


@dataclass(frozen=True, slots=True)
class Read:
    name: str
    workflow: str
    fields: dict[str, str]
    document: ReadDocument | Rejected


ENGINES = ("tesseract", "ppocr")


def make_engine(engine: str, workers: int) -> OcrEngine:
    """The production engine of a tier: `tesseract` (the first) or `ppocr` (the second)."""
    if engine == "ppocr":
        return ppocr_engine(max_engines=workers)
    return default_engine(max_engines=workers)


def cache_file(cache: Path, name: str, engine: str = "tesseract") -> Path:
    """Where a set read by `engine` is kept (the first tier's file has no engine suffix)."""
    suffix = "" if engine == "tesseract" else f".{engine}"
    return cache / f"{name.replace(' ', '-')}{suffix}.pickle"


def read_folder(folder: Path, workflow: str, workers: int, engine: str = "tesseract") -> list[Read]:
    """Every labelled document of `folder`, read with one OCR engine (at most `workers` busy)."""
    documents = load_dataset(folder)
    ocr = make_engine(engine, workers)
    limits = EngineLimits()

    def one(document: LabelledDocument) -> Read:
        read = read_document(document.path.read_bytes(), ocr=ocr, limits=limits)
        return Read(document.name, workflow, document.fields, read)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, documents))


def set_names() -> list[str]:
    return [*CORPORA, *REAL]


def load_set(cache: Path, name: str, engine: str = "tesseract") -> list[Read]:
    with cache_file(cache, name, engine).open("rb") as handle:
        rows = pickle.load(handle)  # our own cache file
    return [Read(*row) for row in rows]


def read_sets(
    cache: Path,
    *,
    count: int,
    seed: int,
    eval_dir: Path,
    workers: int,
    engine: str = "tesseract",
    names: Sequence[str] | None = None,
) -> None:
    """Read each set of `names` (default: all) with `engine` into `cache`, unless it is there."""
    cache.mkdir(parents=True, exist_ok=True)
    for name in set_names() if names is None else names:
        target = cache_file(cache, name, engine)
        if target.exists():
            continue
        reads: list[Read] = []
        if name in REAL:
            if (eval_dir / name).is_dir():
                reads = read_folder(eval_dir / name, REAL[name], workers, engine)
        else:
            kinds, dpi, level = CORPORA[name]
            with tempfile.TemporaryDirectory(prefix="docflow-calibration-") as tmp:
                folder = Path(tmp) / "set"
                generate_corpus(
                    folder, count=count, seed=seed, kinds=kinds, dpi=dpi, degradation=level
                )
                for workflow, subset in split_by_workflow(folder).items():
                    reads += read_folder(subset, workflow, workers, engine)
        # plain tuples, so the file loads whichever module runs as the script
        target.write_bytes(
            pickle.dumps([(r.name, r.workflow, r.fields, r.document) for r in reads])
        )
        print(f"read {name} with {engine}: {len(reads)} documents", flush=True)
