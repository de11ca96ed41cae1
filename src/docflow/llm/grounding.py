"""Accepting the model's values (pure): grounding, provenance and the status afterwards.

A value is grounded when its printed text is found in the lines that were sent (up to three
consecutive lines, for an address printed across several), OCR-tolerantly: rapidfuzz's
partial ratio of the case- and space-normalised texts (and again with the letters OCR
confuses with digits folded alike) at least `GROUNDED_SCORE`, the lines at
least as long as most of the value. A grounded value that parses as its field's type is
accepted with `ACCEPTED` confidence (at least `review_threshold`); any other is kept for a
reviewer with a confidence halfway between the two thresholds, so the document goes to review.
A `verify` answer confirms OCR's value when it is grounded and parses to the same value
(accepted as above); any other answer leaves OCR's value and confidence as they were, the
doubt standing, with the model's answer beside it (`llm.answer`) for the reviewer. The
field's provenance says `reading: llm`, `locator: llm` and, under `llm`, the provider, model,
tier, task and grounding score; its box is the box of the lines it was grounded on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.fields.confidence import Scored, decide_status
from docflow.extraction.fields.values import parse_value
from docflow.llm.context import VERIFY, Gap, Line

GROUNDED_SCORE = 90.0
ACCEPTED = 0.9
WINDOW = 3
MIN_LENGTH_SHARE = 0.8
NOT_GROUNDED = "not found in the document's text"


@dataclass(frozen=True, slots=True)
class Source:
    """Who answered: the provider, model, tier and task (recorded in each field's `llm`)."""

    provider: str
    model: str
    tier: str
    task: str
    cached: bool = False


# Characters OCR confuses with digits, folded alike on both sides ("55.1O" is "55.10").
_FOLD = str.maketrans({"o": "0", "i": "1", "l": "1", "|": "1", "s": "5", "b": "8"})


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _score(value: str, text: str) -> float:
    plain = fuzz.partial_ratio(value, text)
    return max(plain, fuzz.partial_ratio(value.translate(_FOLD), text.translate(_FOLD)))


def ground(raw: str, lines: Sequence[Line]) -> tuple[float, Sequence[Line]]:
    """The best score of `raw` among windows of consecutive lines, and that window."""
    value = _norm(raw)
    best: tuple[float, Sequence[Line]] = (0.0, ())
    if not value:
        return best
    for start in range(len(lines)):
        for size in range(1, WINDOW + 1):
            window = lines[start : start + size]
            if len(window) < size or len({line.page for line in window}) > 1:
                break
            text = _norm(" ".join(line.text for line in window))
            if len(text) < MIN_LENGTH_SHARE * len(value):
                continue
            score = _score(value, text)
            if score > best[0]:
                best = (score, window)
            break  # a longer window of the same start only adds text
    return best


def doubtful(definition: ExtractionWorkflowDefinition) -> float:
    """The confidence of a value kept for review: between the two thresholds."""
    low, high = definition.confidence_threshold, definition.review_threshold
    return round((low + high) / 2 if high > low else max(0.0, high - 0.01), 4)


def apply_answer(
    fields: Mapping[str, Mapping[str, Any]],
    definition: ExtractionWorkflowDefinition,
    gaps: Sequence[Gap],
    values: Mapping[str, Any],
    lines: Sequence[Line],
    source: Source,
) -> dict[str, dict[str, Any]]:
    """The fields after the model's answer `values` for `gaps` (others as they were)."""
    out = {name: dict(result) for name, result in fields.items()}
    accepted = round(max(ACCEPTED, definition.review_threshold), 4)
    for gap in gaps:
        raw = values.get(gap.name)
        if not isinstance(raw, str) or not raw.strip():
            continue
        field = definition.field(gap.name)
        parsed = parse_value(
            field.type,
            raw,
            date_order=definition.date_order,
            enum_values=field.enum_values,
            pattern=field.pattern,
        )
        score, window = ground(raw, lines)
        grounded = score >= GROUNDED_SCORE and parsed.ok
        before = fields.get(gap.name) or {}
        if gap.task == VERIFY and not (grounded and parsed.value == before.get("value")):
            # the doubt stands: OCR's value stays for a reviewer, with the model's answer
            disagreed = {**_provenance(source, grounded, score), "answer": " ".join(raw.split())}
            out[gap.name] = {**before, "llm": disagreed}
            continue
        confidence = accepted if grounded else doubtful(definition)
        if grounded and parsed.value == before.get("value"):
            confidence = max(confidence, float(before.get("confidence") or 0.0))
        errors = [] if grounded else [parsed.error or NOT_GROUNDED]
        out[gap.name] = {
            "name": gap.name,
            "value": parsed.value,
            "raw": " ".join(raw.split()),
            "confidence": confidence,
            "page": window[0].page if window else None,
            "box": _box(window),
            "locator": "llm",
            "errors": errors,
            "reading": "llm",
            "agreement": None,
            "llm": _provenance(source, grounded, score),
        }
    return out


def _provenance(source: Source, grounded: bool, score: float) -> dict[str, Any]:
    return {
        "provider": source.provider,
        "model": source.model,
        "tier": source.tier,
        "task": source.task,
        "grounded": grounded,
        "score": round(score, 1),
        "cached": source.cached,
    }


def _box(window: Sequence[Line]) -> dict[str, float] | None:
    if not window:
        return None
    return {
        "x0": min(line.box[0] for line in window),
        "y0": min(line.box[1] for line in window),
        "x1": max(line.box[2] for line in window),
        "y1": max(line.box[3] for line in window),
    }


def rescore(
    result: Mapping[str, Any], definition: ExtractionWorkflowDefinition
) -> tuple[str, float, tuple[str, ...]]:
    """The document's status, confidence and reasons from a result's fields, by the
    workflow's thresholds (the engine's own rule, `confidence.decide_status`)."""
    fields = result.get("fields") or {}
    tables = result.get("line_items") or {}
    scored = []
    for field in definition.fields:
        if field.type == FieldType.LINE_ITEMS:
            table = tables.get(field.name) or {}
            rows = table.get("rows") or []
            scored.append(
                Scored(
                    field.name,
                    field.required,
                    float(table.get("confidence") or 0.0),
                    bool(rows),
                    tuple(table.get("errors") or ()),
                )
            )
            continue
        f = fields.get(field.name) or {}
        found = f.get("value") is not None or bool(f.get("raw"))
        scored.append(
            Scored(
                field.name,
                field.required,
                float(f.get("confidence") or 0.0),
                found,
                tuple(f.get("errors") or ()),
            )
        )
    status, confidence, reasons = decide_status(scored, definition)
    return status.value, round(confidence, 4), reasons
