"""Two documents of the same file asking the model at once (a batch holding the file twice, a
re-run while the first run still reads): one call, the other waits for its answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from docflow.llm.gapfill import FLIGHTS
from support.llm_fill import filler, reading
from support.llm_server import ModelServer, serving_model


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with serving_model() as server:
        yield server


def test_concurrent_askers_of_one_question_make_one_call(
    engine: Engine, model: ModelServer
) -> None:
    run = filler(engine, model)
    model.state.delay_seconds = 0.3  # both ask while the first answer is on its way
    start = threading.Barrier(6)
    values: list[str | None] = []

    def ask(n: int) -> None:
        request, fields = reading("PO Number: PO-55")
        start.wait()
        values.append(run.fill(request, fields, f"doc_{n}").fields["po_number"]["value"])

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.state.calls() == 1 and values == ["PO-55"] * 6
    assert len(FLIGHTS) == 0  # no lock kept once nobody asks
