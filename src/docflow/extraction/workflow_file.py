"""Load an extraction workflow definition from a YAML file.

The file holds the same document the API accepts (`ExtractionWorkflowDefinition`), so the CLI,
the evaluation harness and the API refuse the same invalid workflows. Errors name the offending
field by its path as the API does (`fields.2.type`, `errors.field_path`), and add the name of
the field definition it is in (`field 'total'`), so a mistake in a long file is found at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from docflow.errors import InvalidInput, field_path
from docflow.extraction.definition import ExtractionWorkflowDefinition


class WorkflowFileError(InvalidInput):
    """A workflow file that cannot be read, parsed or validated; `field` names the culprit."""

    code = "invalid_workflow_file"


def load_workflow_file(path: Path | str) -> ExtractionWorkflowDefinition:
    """Read, parse and validate `path`; raise `WorkflowFileError` naming the field at fault."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkflowFileError(f"{source}: cannot read the file: {exc}") from exc
    return parse_workflow_yaml(text, source=str(source))


def parse_workflow_yaml(text: str, *, source: str = "<workflow>") -> ExtractionWorkflowDefinition:
    """Parse YAML text into a validated definition (see `load_workflow_file`)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WorkflowFileError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise WorkflowFileError(f"{source}: the top level must be a mapping of workflow settings")
    try:
        return ExtractionWorkflowDefinition.model_validate(document)
    except ValidationError as exc:
        where = field_path(exc.errors()[0]["loc"], document)
        messages = describe_errors(exc, document)
        raise WorkflowFileError(f"{source}: {messages}", field=where or None) from exc


_SHOWN = 200  # characters of a wrong value quoted in a message


def describe_errors(exc: ValidationError, document: Any, *, limit: int | None = None) -> str:
    """The errors of validating `document` as a definition (the first `limit` of them when
    given), each after its `field_path`."""
    errors = exc.errors()
    shown = [_describe(err, document) for err in errors[:limit]]
    if len(errors) > len(shown):
        shown.append(f"and {len(errors) - len(shown)} more")
    return "; ".join(shown)


def _describe(error: Any, document: Any) -> str:
    where = field_path(error["loc"], document) or "(workflow)"
    given = error.get("input")
    notes = [f"got {given!r:.{_SHOWN}}"] if isinstance(given, str | int | float | bool) else []
    named = _named_item(error["loc"], document)
    if named is not None:
        notes.append(f"field {named[:_SHOWN]!r}")
    message = str(error["msg"]).removeprefix("Value error, ")  # pydantic's, for our validators
    return f"{where}: {message}" + (f" ({'; '.join(notes)})" if notes else "")


def _named_item(loc: Sequence[int | str], document: Any) -> str | None:
    """The name of the innermost named list item on the path (a field definition's `name`)."""
    named: str | None = None
    node: Any = document
    tagged: Any = None  # as in `field_path`: a discriminator tag is not in the document
    for item in loc:
        if isinstance(item, int):
            node = node[item] if isinstance(node, list) and 0 <= item < len(node) else None
            name = node.get("name") if isinstance(node, dict) else None
            named = name if isinstance(name, str) and name else named
        elif isinstance(node, dict) and node is not tagged and node.get("kind") == item:
            tagged = node
        else:
            node = node.get(item) if isinstance(node, dict) else None
    return named
