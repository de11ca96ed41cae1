"""The table of a batch's results, one row per document, shared by the remote CLI's
`batches results` and the export endpoints: the document's columns, then a column per scalar
field holding its normalised value. A document is given as the API shows it (`id`, `name`,
`status`, `confidence`, `error_code`, `result`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

DOCUMENT_COLUMNS = ("document_id", "name", "status", "confidence", "error_code")


def field_names(details: Iterable[dict[str, Any]]) -> list[str]:
    """The scalar fields' names of these documents' results, in the order first met."""
    names: list[str] = []
    for detail in details:
        for name in (detail.get("result") or {}).get("fields") or {}:
            if name not in names:
                names.append(name)
    return names


def columns(names: list[str]) -> list[str]:
    """The header of a table with these fields."""
    return [*DOCUMENT_COLUMNS, *names]


def row(detail: dict[str, Any], names: list[str]) -> list[Any]:
    """One document's row: its columns, then each named field's value (None when absent)."""
    fields = (detail.get("result") or {}).get("fields") or {}
    values = [(fields[n] or {}).get("value") if n in fields else None for n in names]
    return [
        detail["id"],
        detail["name"],
        detail["status"],
        detail.get("confidence"),
        detail.get("error_code"),
        *values,
    ]


def line_item_rows(detail: dict[str, Any], table: str, names: list[str]) -> list[list[Any]]:
    """The rows of one line-item table of a document: document id, row number (from 1), then
    each named column's value."""
    found = ((detail.get("result") or {}).get("line_items") or {}).get(table) or {}
    return [
        [detail["id"], number, *(r.get(n) for n in names)]
        for number, r in enumerate(found.get("rows") or [], start=1)
    ]
