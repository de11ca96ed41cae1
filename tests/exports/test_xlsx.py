"""The XLSX export on its own: text stays text (no formula from a value starting with `=`, no
control characters the format refuses), line-item tables get valid, distinct sheet titles, and
a large export streams: the memory it holds does not grow with the number of documents."""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Iterator
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
