"""Loading extraction workflows from YAML: the examples load, mistakes name their field."""

from __future__ import annotations

from pathlib import Path

import pytest

from docflow.extraction.definition import FieldType
from docflow.extraction.workflow_file import WorkflowFileError, load_workflow_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_invoice_example_loads_with_the_contract_field_names() -> None:
    definition = load_workflow_file(EXAMPLES / "invoice.yaml")
    names = [f.name for f in definition.fields]
    assert names == [
        "invoice_number",
        "invoice_date",
        "due_date",
        "vendor_name",
        "subtotal",
        "tax",
        "total",
        "currency",
        "line_items",
    ]
    assert definition.field("currency").type == FieldType.ENUM
    assert "EUR" in definition.field("currency").enum_values
    columns = [c.name for c in definition.field("line_items").columns]
    assert columns == ["description", "quantity", "unit_price", "amount"]
    assert definition.confidence_threshold < definition.review_threshold


def test_receipt_example_loads() -> None:
    definition = load_workflow_file(EXAMPLES / "receipt.yaml")
    assert sorted(f.name for f in definition.fields) == ["address", "company", "date", "total"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            "name: w\nfields:\n  - name: total\n    type: monee\n",
            "fields.0.type",
            "monee",
        ),
        (
            "name: w\nfields:\n  - name: total\n    locators:\n"
            "      - kind: pattern\n        pattern: '(['\n",
            "fields.0.locators.0.pattern",
            "not a supported regular expression",
        ),
        (
            "name: w\nfields:\n  - name: code\n    type: regex\n    pattern: '(?<=No)\\d+'\n",
            "fields.0.pattern",
            "lookbehind is not supported",
        ),
        (
            "name: w\nfields:\n  - name: total\n    locators:\n      - kind: label\n"
            "        labels: []\n",
            "fields.0.locators.0.labels",
            "at least 1",
        ),
        ("name: w\nfields:\n  - name: Total\n", "fields.0.name", "pattern"),
        ("name: w\nfields: []\n", "fields", "at least 1"),
        (
            "name: w\nfields:\n  - name: a\n  - name: total\n    type: monee\n",
            "fields.1.type",
            "(got 'monee'; field 'total')",
        ),
        ("name: w\nfields:\n  - name: a\n    colour: red\n", "fields.0.colour", "Extra"),
        (
            "name: w\nfields:\n  - name: kind\n    type: enum\n",
            "fields.0",
            "enum needs enum_values",
        ),
    ],
)
def test_invalid_files_name_the_field(tmp_path: Path, body: str, field: str, message: str) -> None:
    with pytest.raises(WorkflowFileError) as caught:
        load_workflow_file(_write(tmp_path, body))
    assert caught.value.field == field
    assert field in str(caught.value)
    assert message in str(caught.value)


def test_yaml_syntax_and_shape_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkflowFileError, match="not valid YAML"):
        load_workflow_file(_write(tmp_path, "name: [unclosed\n"))
    with pytest.raises(WorkflowFileError, match="top level must be a mapping"):
        load_workflow_file(_write(tmp_path, "- just\n- a list\n"))
    with pytest.raises(WorkflowFileError, match="cannot read"):
        load_workflow_file(tmp_path / "missing.yaml")


def test_example_labels_keep_their_hash_signs() -> None:
    # In YAML an unquoted " #" starts a comment: "Inv #" would silently load as "Inv".
    definition = load_workflow_file(EXAMPLES / "invoice.yaml")
    labels = [
        label
        for locator in definition.field("invoice_number").locators
        if locator.kind == "label"
        for label in locator.labels
    ]
    assert {"Invoice #", "Inv #"} <= set(labels)
    assert len(labels) == len(set(labels))
