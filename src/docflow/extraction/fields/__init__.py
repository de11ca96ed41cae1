"""Typed fields: value parsers, locators, line items, confidence and status.

Public entry points: `parse_value` (one raw text to its normalised typed value) and
`extract_fields` (a read document and a workflow definition to an `ExtractionResult`). What is
looked for when a field declares no locators is described in `defaults` and `position`.
"""

from __future__ import annotations

from docflow.extraction.fields.extract import extract_fields
from docflow.extraction.fields.values import ParsedValue, parse_value

__all__ = ["ParsedValue", "extract_fields", "parse_value"]
