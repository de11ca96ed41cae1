"""Property tests for ExtractionWorkflowDefinition validation: what it accepts round-trips
unchanged; unique field names, ordered thresholds and each type's specifics are enforced."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from docflow.extraction import definition as bounds
from docflow.extraction.definition import FIELD_NAME, ExtractionWorkflowDefinition, FieldType
from docflow.extraction.patterns import MAX_PATTERN_LENGTH

PROPERTY = settings(max_examples=60, deadline=None)

COLUMN_TYPES = ["string", "integer", "decimal", "money", "date"]
names = st.from_regex(FIELD_NAME, fullmatch=True)
unit = st.floats(min_value=0, max_value=1, allow_nan=False)
labels = st.lists(st.text(min_size=1, max_size=12).filter(str.strip), min_size=1, max_size=3)


@st.composite
def locators(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["label", "pattern", "region"]))
    if kind == "label":
        return {"kind": "label", "labels": draw(labels)}
    if kind == "pattern":
        return {"kind": "pattern", "pattern": draw(st.sampled_from([r"\d+", r"INV-(\w+)", "x"]))}
    x0, y0 = draw(st.floats(0, 0.5)), draw(st.floats(0, 0.5))
    return {"kind": "region", "box": {"x0": x0, "y0": y0, "x1": x0 + 0.25, "y1": y0 + 0.25}}


@st.composite
def fields(draw: st.DrawFn, name: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(list(FieldType)))
    field: dict[str, Any] = {
        "name": name,
        "type": kind.value,
        "required": draw(st.booleans()),
        "locators": draw(st.lists(locators(), max_size=2)),
    }
    if kind == FieldType.ENUM:
        value = st.text(min_size=1, max_size=bounds.MAX_LABEL_LENGTH)
        field["enum_values"] = draw(st.lists(value, min_size=1, max_size=4))
    if kind == FieldType.REGEX:
        field["pattern"] = draw(st.sampled_from([r"^\d{4}$", r"[A-Z]{2}\d+", "abc"]))
    if kind == FieldType.LINE_ITEMS:
        cols = draw(st.lists(names, min_size=1, max_size=4, unique=True))
        field["columns"] = [
            {
                "name": c,
                "type": draw(st.sampled_from(["string", "integer", "money"])),
                "labels": [c],
            }
            for c in cols
        ]
    return field


@st.composite
def definitions(draw: st.DrawFn) -> dict[str, Any]:
    field_names = draw(st.lists(names, min_size=1, max_size=6, unique=True))
    low, high = sorted([draw(unit), draw(unit)])
    return {
        "name": draw(st.text(min_size=1, max_size=40).filter(str.strip)),
        "fields": [draw(fields(n)) for n in field_names],
        "confidence_threshold": low,
        "review_threshold": high,
        "tolerated_failure_percent": draw(st.floats(0, 100)),
        "complexity_tier": draw(st.sampled_from(["simple", "standard", "complex"])),
    }


@PROPERTY
@given(definitions())
def test_valid_definitions_round_trip_through_json(data: dict[str, Any]) -> None:
    definition = ExtractionWorkflowDefinition.model_validate(data)
    again = ExtractionWorkflowDefinition.model_validate(definition.model_dump(mode="json"))
    assert again == definition
    assert [f.name for f in definition.fields] == [f["name"] for f in data["fields"]]


@PROPERTY
@given(definitions(), st.data())
def test_duplicate_field_names_are_refused(data: dict[str, Any], draw: st.DataObject) -> None:
    duplicate = dict(draw.draw(st.sampled_from(data["fields"])))
    data["fields"] = [*data["fields"], duplicate]
    with pytest.raises(ValidationError, match="unique"):
        ExtractionWorkflowDefinition.model_validate(data)


@PROPERTY
@given(definitions(), unit, unit)
def test_thresholds_must_be_ordered(data: dict[str, Any], confidence: float, review: float) -> None:
    data.update(confidence_threshold=confidence, review_threshold=review)
    if confidence <= review:
        ExtractionWorkflowDefinition.model_validate(data)
    else:
        with pytest.raises(ValidationError, match="confidence_threshold"):
            ExtractionWorkflowDefinition.model_validate(data)


@PROPERTY
@given(
    definitions(),
    st.sampled_from(["confidence_threshold", "review_threshold"]),
    st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.000001)).filter(lambda v: v == v),
)
def test_thresholds_stay_within_zero_and_one(data: dict[str, Any], key: str, value: float) -> None:
    data[key] = value
    with pytest.raises(ValidationError):
        ExtractionWorkflowDefinition.model_validate(data)


@PROPERTY
@given(st.text(max_size=70).filter(lambda s: not re.fullmatch(FIELD_NAME, s)))
def test_field_names_must_be_identifiers(bad: str) -> None:
    with pytest.raises(ValidationError):
        ExtractionWorkflowDefinition.model_validate({"name": "w", "fields": [{"name": bad}]})


BROKEN_SPECIFICS = [
    ({"type": "enum"}, "enum_values"),
    ({"type": "regex"}, "pattern"),
    ({"type": "regex", "pattern": "(unclosed"}, "regular expression"),
    ({"type": "regex", "pattern": r"(\d)-\1"}, "backreferences are not supported"),
    ({"type": "line_items"}, "columns"),
    ({"type": "string", "columns": [{"name": "a", "labels": ["A"]}]}, "only line_items"),
    (
        {
            "type": "line_items",
            "columns": [{"name": "a", "labels": ["A"]}, {"name": "a", "labels": ["B"]}],
        },
        "column names must be unique",
    ),
    ({"type": "line_items", "columns": [{"name": "a", "type": "enum", "labels": ["A"]}]}, "column"),
    ({"type": "date", "locators": [{"kind": "pattern", "pattern": "(["}]}, "regular expression"),
    (
        {"locators": [{"kind": "region", "box": {"x0": 0.5, "y0": 0, "x1": 0.5, "y1": 1}}]},
        "x0 < x1",
    ),
    ({"locators": [{"kind": "label", "labels": ["  "]}]}, "blank"),
]


@pytest.mark.parametrize(("specifics", "message"), BROKEN_SPECIFICS)
@settings(max_examples=10, deadline=None)
@given(name=names)
def test_type_specifics_are_enforced(specifics: dict[str, Any], message: str, name: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        ExtractionWorkflowDefinition.model_validate(
            {"name": "w", "fields": [{"name": name, **specifics}]}
        )


def _label(labels: list[str]) -> dict[str, Any]:
    return {"name": "f", "locators": [{"kind": "label", "labels": labels}]}


def _region_anchor(anchor: str) -> dict[str, Any]:
    box = {"x0": 0, "y0": 0, "x1": 0.5, "y1": 0.5}
    region = {"kind": "region", "box": box, "anchor": anchor, "anchor_box": box}
    return {"name": "f", "locators": [region]}


def _column_labels(labels: list[str]) -> dict[str, Any]:
    return {"name": "f", "type": "line_items", "columns": [{"name": "c", "labels": labels}]}


# (field made with n items or characters, the limit, where the error is reported)
BOUNDS = [
    (lambda n: [{"name": f"f{i}"} for i in range(n)], bounds.MAX_FIELDS, ("fields",)),
    (
        lambda n: [{"name": "f", "locators": [{"kind": "label", "labels": ["x"]}] * n}],
        bounds.MAX_LOCATORS,
        ("fields", 0, "locators"),
    ),
    (lambda n: [_label(["x"] * n)], bounds.MAX_LABELS, ("fields", 0, "locators", 0)),
    (lambda n: [_label(["x" * n])], bounds.MAX_LABEL_LENGTH, ("fields", 0, "locators", 0)),
    (lambda n: [_region_anchor("x" * n)], bounds.MAX_LABEL_LENGTH, ("fields", 0, "locators", 0)),
    (
        lambda n: [{"name": "f", "type": "enum", "enum_values": [str(i) for i in range(n)]}],
        bounds.MAX_ENUM_VALUES,
        ("fields", 0, "enum_values"),
    ),
    (
        lambda n: [{"name": "f", "type": "enum", "enum_values": ["x" * n]}],
        bounds.MAX_LABEL_LENGTH,
        ("fields", 0, "enum_values", 0),
    ),
    (
        lambda n: [
            {
                "name": "f",
                "type": "line_items",
                "columns": [{"name": f"c{i}", "labels": ["x"]} for i in range(n)],
            }
        ],
        bounds.MAX_COLUMNS,
        ("fields", 0, "columns"),
    ),
    (lambda n: [_column_labels(["x"] * n)], bounds.MAX_LABELS, ("fields", 0, "columns", 0)),
    (
        lambda n: [{"name": "f", "type": "regex", "pattern": "a" * n}],
        MAX_PATTERN_LENGTH,
        ("fields", 0, "pattern"),
    ),
    (
        lambda n: [{"name": "f", "locators": [{"kind": "pattern", "pattern": "a" * n}]}],
        MAX_PATTERN_LENGTH,
        ("fields", 0, "locators", 0),
    ),
]


@pytest.mark.parametrize(("make", "limit", "where"), BOUNDS)
def test_what_the_engine_searches_with_is_bounded(
    make: Any, limit: int, where: tuple[str | int, ...]
) -> None:
    """Every list and text the engine's lookups multiply by is refused past its limit, naming
    where (label lookups cost labels x page words, approximate matching a label's length
    squared, each field and locator a pass over the document)."""
    ExtractionWorkflowDefinition.model_validate({"name": "w", "fields": make(limit)})
    with pytest.raises(ValidationError) as refused:
        ExtractionWorkflowDefinition.model_validate({"name": "w", "fields": make(limit + 1)})
    (error,) = refused.value.errors()
    assert error["loc"][: len(where)] == where
    assert error["type"] in ("too_long", "string_too_long")


@pytest.mark.parametrize(("make", "limit", "where"), BOUNDS)
def test_a_stored_definition_is_read_past_the_bounds_that_came_later(
    make: Any, limit: int, where: tuple[str | int, ...]
) -> None:
    """A version stored before the bounds existed is read as stored (to show it), while the
    same data is still refused as a new definition."""
    data = {"name": "w", "fields": make(limit + 1)}
    assert bounds.read_stored(data).model_dump(exclude_unset=True) == data


@pytest.mark.parametrize(
    "pattern", [r"(?<=Invoice No: )\S+", r"INV(?!-)\d+", r"(a)\1", r"(?P<n>a)(?P=n)", r"a\Z"]
)
def test_a_stored_pattern_re2_cannot_run_is_read_as_stored(pattern: str) -> None:
    data = {
        "name": "w",
        "fields": [
            {"name": "a", "type": "regex", "pattern": pattern},
            {"name": "b", "locators": [{"kind": "pattern", "pattern": pattern}]},
        ],
    }
    assert bounds.read_stored(data).model_dump(exclude_unset=True) == data
    with pytest.raises(ValidationError) as refused:
        ExtractionWorkflowDefinition.model_validate(data)
    assert len(refused.value.errors()) == 2


def test_a_stored_definition_still_keeps_the_earlier_rules() -> None:
    """Only the rules that came later are not applied: what no release accepted stays refused."""
    with pytest.raises(ValidationError):
        bounds.read_stored({"name": "w", "fields": [{"name": "a", "type": "regex"}]})


def test_labels_are_bounded_over_the_whole_definition() -> None:
    """Every label is looked up on every page: within their own limits, many fields could still
    carry 200 x 20 x 100 of them."""
    per_field = bounds.MAX_LABELS
    fields = [_label([f"l{f}x{i}" for i in range(per_field)]) | {"name": f"f{f}"} for f in range(5)]
    assert len(fields) * per_field == bounds.MAX_TOTAL_LABELS
    ExtractionWorkflowDefinition.model_validate({"name": "w", "fields": fields})
    fields.append(_region_anchor("Total") | {"name": "anchored"})
    with pytest.raises(ValidationError) as refused:
        ExtractionWorkflowDefinition.model_validate({"name": "w", "fields": fields})
    (error,) = refused.value.errors()
    assert error["loc"] == ("fields",)
    assert f"at most {bounds.MAX_TOTAL_LABELS} labels" in error["msg"]
    assert len(bounds.read_stored({"name": "w", "fields": fields}).fields) == len(fields)
