"""JSON for durable workflow state: every kind of value the flows pass round-trips, anything else
refuses loudly, and nothing but the marked classes is ever built from stored text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from dbos._error import DBOSMaxStepRetriesExceeded

from docflow.batches.steps import BatchStart, Finished, Gone, Started
from docflow.documents.flows import failure_reason
from docflow.documents.outcome import Decision, Extracted, Extraction, Rejection
from docflow.documents.steps import Settled
from docflow.events.service import Swept
from docflow.events.steps import Failed, Handled
from docflow.kit.durable_json import RecordedError, dumps, durable, error_kind, loads
from docflow.webhooks.steps import Ended, Retry


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        0.25,
        "naïve ☃",
        [1, "a", None],
        {"args": ("bat_1",), "kwargs": {}},  # DBOS's workflow inputs: a tuple of arguments
        [("evt_1", "ten_1"), ("evt_2", "ten_2")],
        ("DELIVERED", 0.0),
        datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
        date(2026, 3, 1),
        Decimal("1234.50"),
        {"$t": "not a tag", "x": 1},  # a dict that looks like a tagged value stays a dict
        {1: "one", ("a", 2): "pair"},
        Started(tenant_id="ten_1", document_ids=("doc_1", "doc_2")),
        Finished(tenant_id="ten_1", status="SUCCEEDED"),
        Gone(batch_id="bat_1"),
        Extracted(
            status="SUCCEEDED",
            confidence=0.93,
            reasons=("total below threshold",),
            result={"fields": {"total": {"value": "12.00", "confidence": 0.9}}},
            result_ref=None,
            version=3,
            batch_id="bat_1",
        ),
        Rejection(code="corrupt_file", reason="the PDF cannot be read", version=3, batch_id="b"),
        Settled(status="FAILED"),
        Decision(status="SUCCEEDED", error_code=None, reason=None),
        Failed(error="HTTP 500", category="transient"),
        Handled(),
        Retry(seconds=61.5),
        Ended(status="DELIVERED"),
        Swept(events=1, dead_letters=0, consumer_records=2),
    ],
)
def test_values_round_trip_with_their_types(value: Any) -> None:
    text = dumps(value)
    json.loads(text)  # plain JSON text
    again = loads(text)
    assert again == value and type(again) is type(value)


def test_a_named_tuple_and_a_dataclass_keep_their_own_type_inside_containers() -> None:
    again = loads(dumps({"swept": [Swept(1, 2, 3)], "start": (Started("t", ()),)}))
    assert isinstance(again["swept"][0], Swept) and isinstance(again["start"][0], Started)


def test_a_union_of_durable_dataclasses_reads_back_as_the_case_it_was() -> None:
    """A step returning a union (`BatchStart`, `Extraction | Settled`) is stored by the case's
    own registered name, so the reader gets that case back and can match on it."""
    starts: list[BatchStart] = [Started("t", ("d",)), Finished("t", "FAILED"), Gone("b")]
    assert [type(loads(dumps(s))) for s in starts] == [Started, Finished, Gone]
    outcomes: list[Extraction | Settled] = [
        Extracted("SUCCEEDED", 0.9, (), {}, None, 1, "b"),
        Rejection("empty_file", "the file is empty", 1, "b"),
        Settled("PROCESSING"),
    ]
    again = [loads(dumps(o)) for o in outcomes]
    assert again == outcomes and [type(o) for o in again] == [Extracted, Rejection, Settled]


def test_exceptions_are_recorded_as_their_type_name_and_message() -> None:
    again = loads(dumps(ValueError("corrupt input")))
    assert isinstance(again, RecordedError)
    assert (again.type_name, str(again)) == ("ValueError", "corrupt input")
    retries = DBOSMaxStepRetriesExceeded("document.persist", 5, [OSError("disk")])
    recorded = loads(dumps(retries))
    assert recorded.type_name == "DBOSMaxStepRetriesExceeded"
    assert "document.persist" in str(recorded)
    again = loads(dumps(recorded))  # a recorded error recorded again keeps its original type
    assert (again.type_name, str(again)) == (recorded.type_name, str(recorded))


@dataclass(frozen=True)
class _Unmarked:
    value: int


class _Object:
    pass


@pytest.mark.parametrize("value", [_Unmarked(1), _Object(), {"nested": [b"bytes"]}, {1, 2}])
def test_a_value_of_an_unmarked_type_refuses_to_be_written(value: Any) -> None:
    with pytest.raises(TypeError, match="cannot be stored in durable workflow state"):
        dumps(value)


def test_stored_text_builds_only_marked_classes() -> None:
    forged = json.dumps({"$t": "os.system", "fields": {"command": "touch /tmp/owned"}})
    with pytest.raises(ValueError, match="unknown type"):
        loads(forged)
    with pytest.raises(ValueError):
        loads("gASVAAAAAAAAAAB9lC4=")  # base64 of a pickle is not JSON


@dataclass(frozen=True)
class _Marked:
    value: int


def test_marking_refuses_other_classes_and_a_second_class_of_the_same_name() -> None:
    with pytest.raises(TypeError):
        durable(_Object)
    durable(_Marked)
    assert loads(dumps(_Marked(2))) == _Marked(2)
    impostor = dataclass(frozen=True)(type("_Marked", (), {"__annotations__": {"value": "int"}}))
    impostor.__module__ = __name__
    with pytest.raises(ValueError, match="already registered"):
        durable(impostor)
    with pytest.raises(TypeError):  # not the registered class, though it has the same name
        dumps(impostor(3))


def test_an_error_read_back_is_named_by_the_type_it_was_recorded_from() -> None:
    assert error_kind(loads(dumps(ValueError("corrupt input")))) == "ValueError"
    assert error_kind(KeyError("x")) == "KeyError"
    assert failure_reason(loads(dumps(OSError("disk")))) == "processing failed: OSError"
