"""The result cache on an identical re-run: the same file asks nothing the second time, even
when OCR read its text differently, or the engine missed a field one time and doubted it the
next, or the model answered null."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from support.llm_fill import filler, reading
from support.llm_server import ModelServer, serving_model


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with serving_model() as server:
        yield server


def test_the_same_file_read_differently_asks_nothing_again(
    engine: Engine, model: ModelServer
) -> None:
    run = filler(engine, model)
    first, fields = reading("PO Number: PO-77")
    assert run.fill(first, fields, "doc_1").fields["po_number"]["value"] == "PO-77"
    assert model.state.calls() == 1
    # the same bytes, read again under load: another OCR text, and the PO number doubted
    # instead of missing
    again, fields = reading("PO Numbcr: PO-77", doubted="PO-7")
    filled = run.fill(again, fields, "doc_2")
    assert model.state.calls() == 1 and filled.summary["cache_hits"] == 1
    assert filled.fields["po_number"]["value"] == "PO-77"
    # another file with the same text is another question
    other, fields = reading("PO Number: PO-77", file_hash="e" * 64)
    run.fill(other, fields, "doc_3")
    assert model.state.calls() == 2


def test_a_null_answer_is_cached_too(engine: Engine, model: ModelServer) -> None:
    run = filler(engine, model)
    request, fields = reading("Thank you for your business")
    assert run.fill(request, fields, "doc_1").fields["po_number"]["value"] is None
    run.fill(request, fields, "doc_2")
    assert model.state.calls() == 1
