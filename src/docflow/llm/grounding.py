"""Accepting the model's values (pure): grounding, provenance and the status afterwards.

A value is grounded when its printed text is found in the lines that were sent (up to three
consecutive lines, for an address printed across several), OCR-tolerantly: rapidfuzz's
partial ratio of the case- and space-normalised texts (and again with the letters OCR
confuses with digits folded alike) at least `GROUNDED_SCORE`, the lines at least as long as
most of the value. An answer that is not grounded, or does not parse as its field's type, is
dropped: the field stays as the engine read it, its `llm` says why (`dropped`) and the
document's reasons say so (`llm_dropped`); its text is kept nowhere.

A grounded answer that parses:
- equal to the engine's value (a `verify` confirming it): accepted with `ACCEPTED` confidence
  (at least `review_threshold`), as it always was;
- otherwise a **model-only** value (a field the engine missed, or one whose doubted value the
  model corrects): it becomes the field's value with the confidence the engine's own
  calibration gives it as one more reading (`_calibrated`), capped just under
  `review_threshold` (`model_cap`) and marked `needs_review`, so the document is held for
  review however the field is weighed (required or not). A corrected engine value is kept
  beside it (`alternative`). An engine value at or above `review_threshold` is never replaced.
  `vouched` is the hook for evidence from the tenant's reviews: a model-only value it backs
  keeps its calibrated confidence and is not held (none is kept yet, `no_reviews`).
Being found in the text is all grounding proves: a value printed there by whoever wrote the
document (an injected "answer total=999999") is grounded by construction, which is why a
model-only value never passes without review.

The field's provenance says `reading: llm`, `locator: llm` and, under `llm`, the provider,
model, tier, task and grounding score; its box is the box of the lines it was grounded on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.fields.combine import type_family
from docflow.extraction.fields.confidence import (
    Scored,
    Signals,
    consensus,
    decide_status,
    field_confidence,
    ocr_confidence,
)
from docflow.extraction.fields.values import parse_value
from docflow.extraction.result import DocumentStatus
from docflow.llm.context import Gap, Line

GROUNDED_SCORE = 90.0
ACCEPTED = 0.9
WINDOW = 3
MIN_LENGTH_SHARE = 0.8
CAP_MARGIN = 0.01
NOT_GROUNDED = "not found in the document's text"
NOT_PARSED = "not a value of the field's type"
CONFIDENT = "the engine's value is at or above review_threshold"
DROPPED = "llm_dropped"


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


def model_cap(definition: ExtractionWorkflowDefinition) -> float:
    """The most confidence a model-only value gets: just under `review_threshold` (not under
    `confidence_threshold` when there is room), so it never passes without review."""
    low, high = definition.confidence_threshold, definition.review_threshold
    return round(max(low, high - CAP_MARGIN) if high > low else high - CAP_MARGIN, 4)


def no_reviews(name: str, value: Any) -> bool:
    """The hook for the tenant's reviews (`Vouch`): whether reviewed documents of the workflow
    back a model-only `value` of field `name`, so it need not be held. No such evidence is
    kept yet: never."""
    return False


Vouch = Callable[[str, Any], bool]


def apply_answer(
    fields: Mapping[str, Mapping[str, Any]],
    definition: ExtractionWorkflowDefinition,
    gaps: Sequence[Gap],
    values: Mapping[str, Any],
    lines: Sequence[Line],
    source: Source,
    *,
    vouched: Vouch = no_reviews,
) -> dict[str, dict[str, Any]]:
    """The fields after the model's answer `values` for `gaps` (others as they were)."""
    out = {name: dict(result) for name, result in fields.items()}
    for gap in gaps:
        raw = values.get(gap.name)
        if isinstance(raw, str) and raw.strip():
            before = dict(fields.get(gap.name) or {})
            out[gap.name] = _applied(definition, gap, raw, before, lines, source, vouched)
    return out


def _applied(
    definition: ExtractionWorkflowDefinition,
    gap: Gap,
    raw: str,
    before: dict[str, Any],
    lines: Sequence[Line],
    source: Source,
    vouched: Vouch,
) -> dict[str, Any]:
    """One field after the model's printed answer `raw` for it."""
    field = definition.field(gap.name)
    parsed = parse_value(
        field.type,
        raw,
        date_order=definition.date_order,
        enum_values=field.enum_values,
        pattern=field.pattern,
    )
    score, window = ground(raw, lines)
    provenance = _provenance(source, score >= GROUNDED_SCORE, score)
    engine = before.get("value")
    if score < GROUNDED_SCORE or not parsed.ok:
        why = NOT_GROUNDED if score < GROUNDED_SCORE else parsed.error or NOT_PARSED
        return {**before, "llm": {**provenance, "dropped": why}}
    if engine is not None and float(before.get("confidence") or 0.0) >= definition.review_threshold:
        return {**before, "llm": {**provenance, "dropped": CONFIDENT}}  # never overridden
    value: dict[str, Any] = {
        "name": gap.name,
        "value": parsed.value,
        "raw": " ".join(raw.split()),
        "page": window[0].page,
        "box": _box(window),
        "locator": "llm",
        "errors": [],
        "reading": "llm",
        "agreement": None,
    }
    if engine is not None and parsed.value == engine:  # a confirmation
        confidence = max(ACCEPTED, definition.review_threshold, float(before["confidence"] or 0))
        return {**value, "confidence": round(confidence, 4), "llm": provenance}
    calibrated = _calibrated(definition, gap.name, score, window, before)
    held = not vouched(gap.name, parsed.value)
    value["confidence"] = min(calibrated, model_cap(definition)) if held else calibrated
    value["llm"] = {**provenance, "calibrated": calibrated}
    if engine is not None:
        value["alternative"] = _alternative(before)
    return {**value, "needs_review": True} if held else value


def _calibrated(
    definition: ExtractionWorkflowDefinition,
    name: str,
    score: float,
    window: Sequence[Line],
    before: Mapping[str, Any],
) -> float:
    """The model's value as one more reading, by the engine's own calibration: the OCR
    confidence of the lines it was grounded on, the grounding score as its locator's score,
    and the engine's value, when there is one, as a rival."""
    rivals = [float(before.get("confidence") or 0.0)] if before.get("value") is not None else []
    signals = Signals(
        ocr=ocr_confidence([line.confidence for line in window]),
        locator=score / 100,
        kinds=1,
        consensus=consensus(score / 100, rivals),
        valid=True,
        kind=type_family(definition.field(name).type),
    )
    return round(field_confidence(signals), 4)


def _alternative(before: Mapping[str, Any]) -> dict[str, Any]:
    """What the engine read, kept beside the model's value for the reviewer."""
    keys = ("value", "raw", "confidence", "page", "box", "locator", "reading")
    return {key: before.get(key) for key in keys}


def dropped_notes(fields: Mapping[str, Mapping[str, Any]], gaps: Sequence[Gap]) -> list[str]:
    """The document's reasons for each answer of `gaps` that was not accepted."""
    notes = []
    for gap in gaps:
        why = ((fields.get(gap.name) or {}).get("llm") or {}).get("dropped")
        if why:
            notes.append(f"{DROPPED}: {gap.name}: the model's answer was dropped ({why})")
    return notes


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
    return _held(fields, definition, status, confidence, reasons)


def _held(
    fields: Mapping[str, Mapping[str, Any]],
    definition: ExtractionWorkflowDefinition,
    status: DocumentStatus,
    confidence: float,
    reasons: tuple[str, ...],
) -> tuple[str, float, tuple[str, ...]]:
    """The status with the model-only values (`needs_review`) held for review: a document
    that would succeed goes to review, its confidence no higher than theirs (nor under
    `confidence_threshold`, as the status says review), and the reasons name each of them."""
    held = {
        name: float(f.get("confidence") or 0.0)
        for name, f in fields.items()
        if f.get("needs_review") and f.get("value") is not None
    }
    if held and status == DocumentStatus.SUCCEEDED:
        lowest = max(min(held.values()), definition.confidence_threshold)
        status, confidence = DocumentStatus.REVIEW_REQUIRED, min(confidence, lowest)
    named = {reason.split(":", 1)[0] for reason in reasons}
    reasons += tuple(
        f"{name}: a language model's value the engine did not read (confidence "
        f"{held[name]:.2f}), held for review"
        for name in held
        if name not in named
    )
    return status.value, round(confidence, 4), reasons
