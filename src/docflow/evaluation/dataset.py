"""A labelled dataset: documents with a `<name>.json` label beside them.

The label holds `{"fields": {"<field>": "<normalised value>", ...}, "line_items": [...]}`;
other keys (such as `source`) are ignored. Documents without a label are not part of the set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOCUMENT_SUFFIXES = frozenset({".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff"})


class DatasetError(ValueError):
    """A dataset folder or label that cannot be used; the message names the file."""


@dataclass(frozen=True, slots=True)
class LabelledDocument:
    name: str
    path: Path
    fields: dict[str, str]
    line_items: tuple[dict[str, str], ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def load_dataset(folder: Path, *, limit: int | None = None) -> list[LabelledDocument]:
    """Every document in `folder` (not recursive) with a label beside it, sorted by file name."""
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a directory")
    documents: list[LabelledDocument] = []
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in DOCUMENT_SUFFIXES or not path.is_file():
            continue
        label = path.with_suffix(".json")
        if not label.is_file():
            continue
        documents.append(read_label(path, label))
        if limit is not None and len(documents) >= limit:
            break
    return documents


def read_label(document: Path, label: Path) -> LabelledDocument:
    """Parse one label file; values are kept as strings, blank values are dropped (unlabelled)."""
    try:
        raw = json.loads(label.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{label}: cannot read the label: {exc}") from exc
    fields = raw.get("fields") if isinstance(raw, dict) else None
    if not isinstance(fields, dict):
        raise DatasetError(f"{label}: a label needs a 'fields' object")
    values = {
        str(name): str(value)
        for name, value in fields.items()
        if value is not None and str(value).strip()
    }
    items = raw.get("line_items")
    rows: tuple[dict[str, str], ...] | None = None
    if isinstance(items, list):
        rows = tuple(
            {str(k): str(v) for k, v in row.items() if v is not None}
            for row in items
            if isinstance(row, dict)
        )
    extra = {k: v for k, v in raw.items() if k not in ("fields", "line_items")}
    return LabelledDocument(document.name, document, values, rows, extra)
