"""Generated documents for the scenarios, cached under bench/.cache/ by kind, seed and count.

Invoices only (the layouts `examples/invoice.yaml` is written for), from `docflow.corpus`: text
PDFs with a text layer, or scans of them (greyscale JPEG, mild degradation). The same seed and
count give the same bytes, so a cached folder is reused as is; scans are made on every core.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from docflow.corpus.generate import INVOICE_LAYOUTS, LAYOUTS, make_document
from docflow.corpus.scan import LEVELS, scan

CACHE = Path(__file__).resolve().parents[1] / ".cache"
SCAN_DPI = 200
_DONE = "manifest.json"


@dataclass(frozen=True)
class BenchFile:
    """One document to submit: its file name, content type and bytes."""

    name: str
    content_type: str
    path: Path

    def read(self) -> bytes:
        return self.path.read_bytes()


def invoice_index(k: int) -> int:
    """The corpus index of the k-th invoice (the corpus cycles through all layouts)."""
    per_cycle = len(INVOICE_LAYOUTS)
    return (k // per_cycle) * len(LAYOUTS) + k % per_cycle


def _scan_one(seed: int, k: int, folder: str) -> str:
    index = invoice_index(k)
    document = make_document(seed, index)
    rng = np.random.default_rng([seed, index])
    data = scan(document.pdf, dpi=SCAN_DPI, level=LEVELS["mild"], rng=rng)
    name = f"{document.name}-scan.jpg"
    (Path(folder) / name).write_bytes(data)
    return name


def _generate(kind: str, seed: int, count: int, folder: Path) -> list[str]:
    if kind == "pdf":
        names = []
        for k in range(count):
            document = make_document(seed, invoice_index(k))
            names.append(f"{document.name}.pdf")
            (folder / names[-1]).write_bytes(document.pdf)
        return names
    workers = min(os.cpu_count() or 1, count)
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_scan_one, [seed] * count, range(count), [str(folder)] * count))


def documents(kind: str, *, count: int, seed: int = 1) -> list[BenchFile]:
    """`count` invoices as text PDFs (`kind` "pdf") or scans ("scan"), generated once."""
    folder = CACHE / f"{kind}-seed{seed}-n{count}"
    manifest = folder / _DONE
    if not manifest.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        manifest.write_text(json.dumps(_generate(kind, seed, count, folder)))
    content_type = "application/pdf" if kind == "pdf" else "image/jpeg"
    names: list[str] = json.loads(manifest.read_text())
    return [BenchFile(name, content_type, folder / name) for name in names]
