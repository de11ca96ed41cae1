"""The prompt (pure): a stable prefix, this document's request, and the answer's schema.

The prefix holds the instructions and every field definition of the workflow, in the
definition's order, and nothing of the document: it is the same text for every document
read under one workflow version, so a provider's prompt cache serves it from the second
call on. The request names the fields asked for (only those), the values OCR doubts for a
`verify` task, and the chosen lines. The schema has exactly the asked fields, each a string
as printed (or null): docflow parses and grounds the printed text itself, so the model
never normalises a date or an amount on its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.profiles import merge
from docflow.llm.context import VERIFY, Gap, Line, labels_of
from docflow.llm.provider import Prompt

INSTRUCTIONS = """\
You read business documents (invoices, receipts, forms) for an extraction service. The text of
the document was read by OCR, so characters may be wrong, words split or joined, and lines out
of order; you are given only some of its lines, each with its page number, never the whole
document.

Rules:
1. Answer only from the lines you are given. Never guess, complete, translate or invent a value;
   a value that is not printed in the given lines is null.
2. Copy each value exactly as it is printed (same characters, same order), without the label
   before it: an amount with its decimals as printed, a date as printed (not reformatted), a
   name or an address as printed across its lines, joined by a space.
3. For a field marked "verify", a value read by OCR is given: answer the printed value, which is
   that one when the lines confirm it, or the one the lines show instead.
4. Answer with the requested fields only, as the schema says; no comment, no explanation.

The workflow's fields (name, type, what it is, the labels printed before it):
"""


def prefix(definition: ExtractionWorkflowDefinition) -> str:
    """The stable part: instructions and every field of the workflow."""
    profile = merge(definition.selected_profiles)
    lines = [INSTRUCTIONS]
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            continue
        kind = field.type.value
        if field.enum_values:
            kind += ", one of: " + " | ".join(field.enum_values)
        labels = ", ".join(json.dumps(label) for label in labels_of(field, profile))
        description = field.description.strip() or field.name.replace("_", " ")
        lines.append(f"- {field.name} ({kind}): {description} Labels: {labels}.")
    return "\n".join(lines) + "\n"


def request(gaps: Sequence[Gap], lines: Sequence[Line]) -> str:
    """This document's part: the fields asked for and the lines chosen for them."""
    out = [f"Task: {gaps[0].task}", "Fields: " + ", ".join(g.name for g in gaps)]
    for gap in gaps:
        if gap.task == VERIFY and gap.ocr_value is not None:
            out.append(f"verify {gap.name}: OCR read {json.dumps(gap.ocr_value)}")
    out.append("Lines:")
    out.extend(f"[p{line.page}] {line.text}" for line in lines)
    return "\n".join(out) + "\n"


def schema(definition: ExtractionWorkflowDefinition, gaps: Sequence[Gap]) -> dict[str, Any]:
    """The answer's JSON schema: exactly the asked fields, each its printed text or null."""
    properties: dict[str, Any] = {}
    for gap in gaps:
        field = definition.field(gap.name)
        prop: dict[str, Any] = {
            "type": ["string", "null"],
            "description": f"{field.type.value}, as printed",
        }
        if field.type == FieldType.ENUM:
            prop["enum"] = [*field.enum_values, None]
        properties[gap.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [gap.name for gap in gaps],
        "additionalProperties": False,
    }


def build(
    definition: ExtractionWorkflowDefinition, gaps: Sequence[Gap], lines: Sequence[Line]
) -> Prompt:
    return Prompt(
        prefix=prefix(definition),
        request=request(gaps, lines),
        schema=schema(definition, gaps),
        max_output_tokens=64 + 96 * len(gaps),
    )
