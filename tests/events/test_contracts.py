"""Event contracts: every committed schema is compatible with the committed lock (a field
removed, retyped or made optional needs a new versioned type), envelopes are CloudEvents 1.0,
and no code path hands an event to a consumer except the publisher (no dual write)."""

from __future__ import annotations

import ast
import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import docflow
from docflow.events import envelopes
from docflow.events.envelopes import Envelope
from docflow.events.publisher import CONSUME_FLOW

LOCK = Path(__file__).with_name("schema_lock.json")
SCHEMAS = Path(envelopes.__file__).with_name("schemas")
SRC = Path(docflow.__file__).parent


def _kind(prop: dict[str, Any]) -> list[str]:
    """The JSON types a property admits (a const or enum by the types of its values)."""
    names = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
    if "const" in prop:
        return [names[type(prop["const"])]]
    if "enum" in prop:
        return sorted({names[type(v)] for v in prop["enum"]})
    kind = prop["type"]
    return sorted(kind) if isinstance(kind, list) else [kind]


def describe(schema: dict[str, Any]) -> dict[str, Any]:
    data = schema["properties"]["data"]
    return {
        "required": sorted(data["required"]),
        "fields": {name: _kind(prop) for name, prop in sorted(data["properties"].items())},
    }


def incompatibilities(locked: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What a consumer of the locked contract would lose with the current one."""
    problems = []
    for name, kind in locked["fields"].items():
        if name not in current["fields"]:
            problems.append(f"{name} removed")
        elif current["fields"][name] != kind:
            problems.append(f"{name} retyped {kind} -> {current['fields'][name]}")
    problems += [
        f"{n} no longer required" for n in locked["required"] if n not in current["required"]
    ]
    return problems


def committed() -> dict[str, dict[str, Any]]:
    return {p.name[: -len(".json")]: json.loads(p.read_text()) for p in SCHEMAS.glob("*.json")}


def test_every_type_has_a_schema_named_after_it_and_a_lock_entry() -> None:
    schemas = committed()
    lock = json.loads(LOCK.read_text())
    assert set(envelopes.EVENT_TYPES) == set(schemas) == set(lock)
    for event_type, schema in schemas.items():
        assert schema["title"] == event_type
        assert schema["properties"]["type"] == {"const": event_type}
        jsonschema.Draft202012Validator.check_schema(schema)


def test_committed_schemas_are_compatible_with_the_lock() -> None:
    lock = json.loads(LOCK.read_text())
    for event_type, schema in committed().items():
        problems = incompatibilities(lock[event_type], describe(schema))
        assert problems == [], f"{event_type}: {problems}; publish a new version (.v2) instead"


def test_the_compatibility_check_catches_a_removed_or_retyped_field() -> None:
    schema = committed()[envelopes.DOCUMENT_COMPLETED]
    locked = describe(schema)
    removed = copy.deepcopy(schema)
    del removed["properties"]["data"]["properties"]["batch_id"]
    removed["properties"]["data"]["required"].remove("batch_id")
    retyped = copy.deepcopy(schema)
    retyped["properties"]["data"]["properties"]["version"] = {"type": "string"}
    added = copy.deepcopy(schema)
    added["properties"]["data"]["properties"]["pages"] = {"type": "integer"}
    assert incompatibilities(locked, describe(removed)) == [
        "batch_id removed",
        "batch_id no longer required",
    ]
    assert incompatibilities(locked, describe(retyped)) == [
        "version retyped ['integer'] -> ['string']"
    ]
    assert incompatibilities(locked, describe(added)) == []


def test_envelopes_round_trip_and_carry_no_extracted_values() -> None:
    data = {
        "tenant_id": "ten_1",
        "project_id": "prj_1",
        "workflow_id": "wfl_1",
        "name": "invoice",
        "version": 2,
        "schema_hash": "a" * 64,
        "link": "/v1/workflows/wfl_1",
    }
    envelope = Envelope(
        id="evt_" + "0" * 26,
        source=envelopes.source_for("ten_1"),
        type=envelopes.WORKFLOW_PUBLISHED,
        time=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        subject="workflows/wfl_1",
        data=data,
    )
    body = envelope.to_dict()
    assert body["specversion"] == "1.0" and body["time"] == "2026-01-02T03:04:05Z"
    assert Envelope.from_dict(json.loads(envelope.to_json())) == envelope
    schema = envelopes.schema_for(envelopes.WORKFLOW_PUBLISHED)
    jsonschema.validate(body, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**body, "data": {**data, "fields": {"total": "9.99"}}}, schema)


def _facts(path: Path) -> dict[str, bool]:
    tree = ast.parse(path.read_text(), filename=str(path))
    imports: set[str] = set()
    facts = {"names_consume_flow": False, "calls_handler": False, "uses_consume_flow": False}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imports.add(node.module)
            imports.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and node.value == CONSUME_FLOW:
            facts["names_consume_flow"] = True
        elif isinstance(node, ast.Name) and node.id == "consume_flow":
            facts["uses_consume_flow"] = True
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "handler"
        ):
            facts["calls_handler"] = True
    facts["imports_publisher"] = "docflow.events.publisher" in imports
    facts["calls_handler"] &= any(name.startswith("docflow.events.consumers") for name in imports)
    return facts


def test_only_the_publisher_hands_events_to_consumers() -> None:
    # A consumer runs only inside the consumer workflow (`docflow.events.consume`), which only
    # the publisher module enqueues: the publisher itself, and redrive/replay of archived
    # outbox rows through `publisher.hand_over`. Handlers are called only by the consumer
    # workflow's attempt step. So nothing reaches a consumer without an outbox row. The
    # reconciler names the consumer workflow only to find failed ones and run them again.
    allowed = {
        "names_consume_flow": {"events/publisher.py"},
        "imports_publisher": {
            "events/flows.py",
            "events/service.py",
            "events/steps.py",
            "reconciler/steps.py",
        },
        "uses_consume_flow": {"events/flows.py"},
        "calls_handler": {"events/steps.py"},
    }
    offenders = {
        (path.relative_to(SRC).as_posix(), fact)
        for path in SRC.rglob("*.py")
        for fact, present in _facts(path).items()
        if present and path.relative_to(SRC).as_posix() not in allowed[fact]
    }
    assert offenders == set()
