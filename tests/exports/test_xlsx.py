"""The XLSX export on its own: amounts are numbers and dates dates by the fields' types, text
stays text (no formula from a value starting with `=`, no control characters the format
refuses), line-item tables get valid, distinct sheet titles, and
a large export streams: the memory it holds does not grow with the number of documents."""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from openpyxl import load_workbook

from docflow.exports.service import ExportPlan, xlsx_chunks

PLAN = ExportPlan(
    batch_id="b", fields=["total", "note"], tables={"items": ["description", "amount"]}
)


def _details(count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield {
            "id": f"doc_{i:08d}",
            "name": f"{i}.pdf",
            "status": "SUCCEEDED",
            "confidence": 0.5,
            "error_code": None,
            "result": {
                "fields": {"total": {"value": f"{i}.00"}, "note": {"value": f"note {i} " * 8}},
                "line_items": {
                    "items": {"rows": [{"description": f"part {i}", "amount": "1.00"}] * 2}
                },
            },
        }


def test_text_stays_text_and_sheet_titles_are_valid() -> None:
    plan = ExportPlan(
        batch_id="b",
        fields=["note"],
        tables={"a/b": ["x"], "A_B": ["x"], "t" * 40: ["x"]},
    )
    detail = {
        "id": "d1",
        "name": '=HYPERLINK("http://evil")',
        "status": "SUCCEEDED",
        "confidence": None,
        "error_code": None,
        "result": {"fields": {"note": {"value": "bell\x07 and #N/A"}}, "line_items": {}},
    }
    book = load_workbook(io.BytesIO(b"".join(xlsx_chunks(plan, iter([detail])))))
    sheet = book["documents"]
    assert sheet["B2"].value == '=HYPERLINK("http://evil")' and sheet["B2"].data_type == "s"
    assert sheet["F2"].value == "bell and #N/A"
    assert book.sheetnames == ["documents", "a_b", "A_B_2", "t" * 31]


def _peak(count: int) -> tuple[int, int]:
    """The peak of Python memory while streaming an export of `count` documents, and its size."""
    tracemalloc.start()
    try:
        size = sum(len(chunk) for chunk in xlsx_chunks(PLAN, _details(count)))
        return tracemalloc.get_traced_memory()[1], size
    finally:
        tracemalloc.stop()


def test_a_large_export_streams_in_bounded_memory() -> None:
    small, small_size = _peak(500)
    large, large_size = _peak(10_000)
    assert large_size > 15 * small_size
    # Twenty times the documents: the rows went to disk, so the peak stays about the same.
    assert large < 2 * small + 256 * 1024, (small, large)
    book = load_workbook(io.BytesIO(b"".join(xlsx_chunks(PLAN, _details(3)))), read_only=True)
    assert [r[0] for r in book["items"].iter_rows(values_only=True)] == [
        "document_id",
        *["doc_00000000"] * 2,
        *["doc_00000001"] * 2,
        *["doc_00000002"] * 2,
    ]


def test_numbers_and_dates_are_typed_cells_by_the_fields_types() -> None:
    plan = ExportPlan(
        batch_id="b",
        fields=["total", "rate", "count", "due", "note", "odd"],
        tables={"items": ["description", "amount", "shipped"]},
        types={
            "total": "money",
            "rate": "decimal",
            "count": "integer",
            "due": "date",
            "note": "string",
            "odd": "money",
            "items.description": "string",
            "items.amount": "money",
            "items.shipped": "date",
        },
    )
    values = {"total": "-12.50", "rate": "0.125", "count": "42", "due": "2026-01-31"}
    values |= {"note": "00042", "odd": "=1+1"}
    detail = {
        "id": "d1",
        "name": "1.pdf",
        "status": "SUCCEEDED",
        "confidence": 0.5,
        "error_code": None,
        "result": {
            "fields": {n: {"value": v} for n, v in values.items()},
            "line_items": {
                "items": {"rows": [{"description": "7", "amount": "3.10", "shipped": "bad"}]}
            },
        },
    }
    book = load_workbook(io.BytesIO(b"".join(xlsx_chunks(plan, iter([detail])))))
    total, rate, count, due, note, odd = book["documents"]["F2":"K2"][0]
    assert (total.value, total.data_type, total.number_format) == (-12.5, "n", "#,##0.00")
    assert (rate.value, rate.data_type) == (0.125, "n")
    assert (count.value, count.data_type, count.number_format) == (42, "n", "0")
    assert (due.value, due.data_type, due.is_date) == (datetime(2026, 1, 31), "d", True)
    assert due.number_format == "yyyy-mm-dd"
    # Text fields stay text even when they look like numbers; a money field's value that is
    # not a number (never a formula) stays text.
    assert (note.value, note.data_type) == ("00042", "s")
    assert (odd.value, odd.data_type) == ("=1+1", "s")
    description, amount, shipped = book["items"]["C2":"E2"][0]
    assert (description.value, description.data_type) == ("7", "s")
    assert (amount.value, amount.data_type, amount.number_format) == (3.1, "n", "#,##0.00")
    assert (shipped.value, shipped.data_type) == ("bad", "s")
