"""Typed fields: value parsers, locators, combining, line items, confidence and status.

The pipeline (`docflow.extraction.pipeline`) calls the stages of this package in order; the one
entry point meant for other callers is `parse_value` (one raw text to its normalised typed
value). What is looked for when a field declares no locators is described in `locate`,
`defaults` and `position`, and which field names get it in `docflow.extraction.profiles`.
"""

from __future__ import annotations

from docflow.extraction.fields.values import ParsedValue, parse_value

__all__ = ["ParsedValue", "parse_value"]
