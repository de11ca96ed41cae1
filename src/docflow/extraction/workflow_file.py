"""Load an extraction workflow definition from a YAML file.

The file holds the same document the API accepts (`ExtractionWorkflowDefinition`), so the CLI,
the evaluation harness and the API refuse the same invalid workflows. Errors name the offending
field by path, with field definitions named rather than numbered (`fields[total].type`), so a
mistake in a long file is found at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from docflow.errors import InvalidInput
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
    shown = f" (got {given!r:.{_SHOWN}})" if isinstance(given, str | int | float | bool) else ""
    message = str(error["msg"]).removeprefix("Value error, ")  # pydantic's, for our validators
    return f"{where}: {message}{shown}"


def field_path(loc: Sequence[int | str], document: Any) -> str:
    """Render a pydantic error location as a readable path, naming list items that have a name.

    `("fields", 2, "type")` becomes `fields[total].type` when the third field is named `total`;
    items without a name keep their index (`fields[total].locators[0].pattern`). Discriminator
    tags that pydantic inserts (`label`, `pattern`, `region`) are dropped.
    """
    parts: list[str] = []
    node: Any = document
    tagged: Any = None  # the union member whose discriminator tag was already passed
    for item in loc:
        if isinstance(item, int):
            child = node[item] if isinstance(node, list) and item < len(node) else None
            name = child.get("name") if isinstance(child, dict) else None
            parts.append(f"[{name}]" if isinstance(name, str) and name else f"[{item}]")
            node = child
            continue
        if isinstance(node, dict) and node is not tagged and node.get("kind") == item:
            tagged = node
            continue
        node = node[item] if isinstance(node, dict) and item in node else None
        parts.append(f".{item}" if parts else str(item))
    return "".join(parts)
