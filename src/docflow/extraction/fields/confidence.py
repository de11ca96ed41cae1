"""Field and document confidence, and the document status they lead to.

A field's confidence is meant to be the probability that its value is right. It is a logistic
combination of named signals (`Signals`, turned into numbers by `features`):

    confidence = 1 / (1 + exp(-(sum of COEFFICIENTS[name] x features[name])))

then capped at 0.2 for a value that does not parse as its type. The signals:

- ocr: the words the value was read from, half their mean confidence and half their minimum, so
  one badly read character in an amount counts (text-layer words are 1.0).
- locator: the best score among the candidates that agree on the value (an exact label right of
  the value is 1.0; fallbacks and penalties lower it, see `locators`); more_locators: how many
  further kinds of locator (region, label, pattern, ...) found the same value (at most 2).
- consensus: 0.5 + 0.5 x the winner's share of the support, where a rival value counts in full
  when its support reaches the winner's best single score, fading to nothing at 70% of it
  (rescaled to 0-1 as a feature).
- position_only: only the layout fallback found the value; cross_check: a grand total that the
  amount paid (tender less change) confirms; the field type's family (text, date, amount).

A second OCR reading of the page (the `auto` policy) is weighed afterwards, when the two
readings are merged (`extraction.reading.TWO_READINGS`).

`COEFFICIENTS` come from `python -m bench.calibration` (a logistic regression on the generated
corpora and sroie-dev, checked on invoice2data; docs/accuracy.md shows the curves). A new signal
is a field of `Signals`, a named entry of `features` and a coefficient from a new fit.

Document confidence is the minimum over the required fields (a missing required field is 0),
because a document is only as usable as its weakest required value: a mean would let nine sure
fields hide a wrong total, and reviewers need to see exactly the field that is in doubt. With no
required fields it is the mean of the fields found (1.0 when nothing was asked for). Status:
confidence >= review_threshold -> SUCCEEDED; >= confidence_threshold -> REVIEW_REQUIRED; below ->
FAILED; `reasons` names each required field under review_threshold and why.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldDef, FieldType
from docflow.extraction.model import ReadDocument
from docflow.extraction.result import (
    DocumentStatus,
    ExtractionResult,
    FieldResult,
    LineItemsResult,
)

INVALID_CAP = 0.2
RIVAL_FLOOR = 0.7
# Fitted by `python -m bench.calibration --cache DIR` on the sets read at seed 2026 with 21
# generated documents per corpus (1,033 found fields: 655 generated, 379 sroie-dev).
COEFFICIENTS = {
    "intercept": -4.703,
    "ocr": 5.7,
    "locator": 1.384,
    "more_locators": 1.349,
    "consensus": 1.56,
    "position_only": -0.384,
    "cross_check": 0.893,
    "text": -1.154,
    "date": 0.444,
    "amount": -0.082,
}


def ocr_confidence(confidences: Sequence[float]) -> float:
    if not confidences:
        return 0.0
    return 0.5 * statistics.fmean(confidences) + 0.5 * min(confidences)


def consensus(winner: float, rivals: Sequence[float], reference: float | None = None) -> float:
    """How clearly the winning value (total support `winner`) beats the others (0.5-1.0). A
    rival counts in full from `reference` (the winner's best single score) up, fading out at 70%
    of it, so one strong dissenting locator is felt even when two others agree."""
    reference = winner if reference is None else reference
    if winner <= 0 or reference <= 0:
        return 0.5
    weight = sum(r * _ramp(r / reference) for r in rivals)
    return 0.5 + 0.5 * winner / (winner + weight)


def _ramp(ratio: float) -> float:
    return max(0.0, min(1.0, (ratio - RIVAL_FLOOR) / (1 - RIVAL_FLOOR)))


@dataclass(frozen=True, slots=True)
class Signals:
    """The evidence behind one field's value, each signal named so the fit can weigh it.

    - `ocr`: `ocr_confidence` of the words the value was read from (text layer 1.0);
    - `locator`: the best score among the agreeing candidates (see `locators`);
    - `kinds`: how many kinds of locator (region, label, pattern, ...) found the same value;
    - `consensus`: `consensus` of the winner against its rivals (0.5-1);
    - `valid`: the value parses as its type;
    - `position_only`: only the layout fallback (`position`: where such a field usually sits)
      found it, no label, pattern or region;
    - `cross_check`: a grand total the amount paid (tender less change) confirms;
    - `kind`: the field type's family: "text", "date", "amount" or "other".
    """

    ocr: float
    locator: float
    kinds: int
    consensus: float
    valid: bool
    kind: str
    position_only: bool = False
    cross_check: bool = False


def features(signals: Signals) -> dict[str, float]:
    """The signals as the numbers the logistic combination weighs (see `COEFFICIENTS`)."""
    return {
        "intercept": 1.0,
        "ocr": signals.ocr,
        "locator": signals.locator,
        "more_locators": float(min(2, max(0, signals.kinds - 1))),
        "consensus": 2 * (signals.consensus - 0.5),
        "position_only": float(signals.position_only),
        "cross_check": float(signals.cross_check),
        "text": float(signals.kind == "text"),
        "date": float(signals.kind == "date"),
        "amount": float(signals.kind == "amount"),
    }


def field_confidence(signals: Signals, coefficients: Mapping[str, float] = COEFFICIENTS) -> float:
    """The probability that the value behind `signals` is right, by the logistic fit."""
    z = sum(coefficients.get(name, 0.0) * value for name, value in features(signals).items())
    value = 1 / (1 + math.exp(-max(-50.0, min(50.0, z))))
    return value if signals.valid else min(value, INVALID_CAP)


@dataclass(frozen=True, slots=True)
class Scored:
    """A field's confidence and outcome as the status decision sees it."""

    name: str
    required: bool
    confidence: float
    found: bool
    errors: tuple[str, ...] = ()


def document_confidence(fields: Sequence[Scored]) -> float:
    required = [f.confidence if f.found else 0.0 for f in fields if f.required]
    if required:
        return min(required)
    found = [f.confidence for f in fields if f.found]
    return statistics.fmean(found) if found else 1.0


def decide_status(
    fields: Sequence[Scored], definition: ExtractionWorkflowDefinition
) -> tuple[DocumentStatus, float, tuple[str, ...]]:
    """The document's status, confidence and the reasons naming the fields behind it."""
    confidence = document_confidence(fields)
    if confidence >= definition.review_threshold:
        return DocumentStatus.SUCCEEDED, confidence, ()
    status = (
        DocumentStatus.REVIEW_REQUIRED
        if confidence >= definition.confidence_threshold
        else DocumentStatus.FAILED
    )
    reasons = tuple(
        _reason(f, definition.review_threshold)
        for f in fields
        if f.required and (not f.found or f.confidence < definition.review_threshold)
    )
    if not reasons:  # no required field: the mean of the optional ones was too low
        reasons = tuple(
            _reason(f, definition.review_threshold)
            for f in fields
            if f.found and f.confidence < definition.review_threshold
        )
    return status, confidence, reasons


def _reason(field: Scored, threshold: float) -> str:
    if not field.found:
        return f"{field.name}: required field not found"
    detail = f"; {field.errors[0]}" if field.errors else ""
    return f"{field.name}: confidence {shown_below(field.confidence, threshold)}{detail}"


def shown_below(confidence: float, threshold: float) -> str:
    """'C below T' with C never shown equal to or above T: C is cut (never rounded up) to two
    decimals, and T is shown with the digits it has (0.8 as 0.80, 0.995 as 0.995), so 0.9877
    under 0.99 reads "0.98 below 0.99", not "0.99 below 0.99"."""
    cut = Decimal(repr(confidence)).quantize(Decimal("0.01"), rounding=ROUND_FLOOR)
    limit = Decimal(repr(threshold))
    if int(limit.as_tuple().exponent) > -2:
        limit = limit.quantize(Decimal("0.01"))
    return f"{cut} below {limit}"


def decide(
    document: ReadDocument,
    definition: ExtractionWorkflowDefinition,
    fields: Mapping[str, FieldResult],
    tables: Mapping[str, LineItemsResult],
) -> ExtractionResult:
    """The status stage: the document's status and confidence from its fields and tables."""
    scored = [_scored(f, fields, tables) for f in definition.fields]
    status, confidence, reasons = decide_status(scored, definition)
    sources = {page.source.value for page in document.pages}
    return ExtractionResult(
        status=status,
        confidence=round(confidence, 4),
        fields=dict(fields),
        line_items=dict(tables),
        page_count=len(document.pages),
        text_source=sources.pop() if len(sources) == 1 else ("mixed" if sources else ""),
        reasons=reasons,
    )


def _scored(
    field: FieldDef, fields: Mapping[str, FieldResult], tables: Mapping[str, LineItemsResult]
) -> Scored:
    if field.type == FieldType.LINE_ITEMS:
        table = tables[field.name]
        return Scored(field.name, field.required, table.confidence, bool(table.rows), table.errors)
    result = fields[field.name]
    found = result.value is not None or bool(result.raw)
    return Scored(field.name, field.required, result.confidence, found, result.errors)
