"""Combining the candidates of all locators into one value per field, then its confidence.

Candidates are grouped by normalised value (strings case- and space-insensitively). A group's
support is the sum, over the kinds of locator in it, of the best score of that kind, so two
different locators agreeing beat one locator alone, while one locator repeating itself does not
count twice. The group with the most support wins (valid values before invalid ones; then the best
single score; then the earliest on the page); the other groups are its rivals.

A grand total (a money field the workflow's profiles name so: `total`, `total_amount`,
`grand_total`, `amount_due`, `total_due` or `balance_due` for invoices and receipts) includes every
other amount printed near it: subtotal, tax, rounding, a total before tax. So among the values
whose best candidate scores at least 80% of the best one, the largest wins, unless it scores below
the best and has under 80% of the leader's support (a value two locators agree on is not outgrown
by a weaker one found once); the smaller ones stay rivals and lower the confidence. Amounts within
ten cents of the largest are the same total before and after cash rounding ("Total Incl. GST
27.27", "Rounding -0.02", "Total Rounded 27.25"): the one printed last is what was paid.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.confidence import (
    Signals,
    consensus,
    field_confidence,
    ocr_confidence,
)
from docflow.extraction.fields.locate import Located
from docflow.extraction.fields.payment import payment_candidate
from docflow.extraction.fields.view import DocumentView
from docflow.extraction.profiles import Profile
from docflow.extraction.result import FieldResult

KIND_ORDER = ("region", "label", "pattern", "position", "currency", "payment")
CLOSE_TO_BEST = 0.8
ROUNDING = Decimal("0.10")
# The amount paid beats label finds scoring under its own score divided by this.
PAID_OVER = 0.85
NO_CENTS = 0.5
_CENTS = re.compile(r"\d\s?[.,]\s?\d{2}(?!\d)")


@dataclass(frozen=True, slots=True)
class Choice:
    """A field's winning group of candidates (empty when none was found) and its rivals."""

    name: str
    winner: tuple[Candidate, ...]
    rivals: tuple[tuple[Candidate, ...], ...] = ()
    type: FieldType = FieldType.STRING


@dataclass(frozen=True, slots=True)
class Chosen:
    """The choice of every scalar field, by field name in the definition's order."""

    by_field: Mapping[str, Choice]


def choose_values(
    located: Located,
    view: DocumentView,
    definition: ExtractionWorkflowDefinition,
    profile: Profile,
) -> Chosen:
    """Each field's value from its candidates; the profile's grand totals are cross-checked
    against the amount paid."""
    chosen = {}
    for name, found in located.by_field.items():
        field = definition.field(name)
        grand = field.type == FieldType.MONEY and name in profile.grand_totals
        spec = FieldSpec(field, definition.date_order, profile)
        paid = payment_candidate(view, spec) if grand else None
        chosen[name] = replace(choose(name, found, grand_total=grand, paid=paid), type=field.type)
    return Chosen(chosen)


def choose(
    name: str,
    candidates: Sequence[Candidate],
    *,
    grand_total: bool = False,
    paid: Candidate | None = None,
) -> Choice:
    """The winning value among `candidates` and its rivals. `grand_total` marks an amount that
    includes every other (see the module docstring); `paid` is the amount paid read from the
    payment lines, which settles a grand total."""
    if grand_total and paid is not None and paid.value is not None:
        candidates = _with_payment(candidates, paid)
    if not candidates:
        return Choice(name, ())
    groups: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        groups[_key(candidate)].append(candidate)
    ranked = sorted(groups.values(), key=_rank, reverse=True)
    if grand_total:
        ranked = _largest_first(ranked)
        if paid is not None:
            ranked = _paid_first(ranked, paid)
    return Choice(name, tuple(ranked[0]), tuple(tuple(group) for group in ranked[1:]))


def score_fields(chosen: Chosen) -> dict[str, FieldResult]:
    """The confidence stage: each field's result with its confidence."""
    return {name: field_result(choice) for name, choice in chosen.by_field.items()}


def field_result(choice: Choice) -> FieldResult:
    """The chosen value with its confidence (see `confidence`); no winner is "not found"."""
    if not choice.winner:
        return FieldResult(choice.name, None, None, 0.0, errors=("not found",))
    best = max(choice.winner, key=lambda c: c.score)
    kinds = sorted({c.locator for c in choice.winner}, key=_kind_index)
    confidence = field_confidence(field_signals(choice))
    return FieldResult(
        name=choice.name,
        value=best.value,
        raw=best.raw,
        confidence=round(confidence, 4),
        page=best.page,
        box=best.box,
        locator="+".join(kinds),
        errors=(best.error,) if best.error else (),
    )


def field_signals(choice: Choice) -> Signals:
    """The evidence behind a chosen value (see `confidence.Signals`); needs a winner."""
    best = max(choice.winner, key=lambda c: c.score)
    kinds = {c.locator for c in choice.winner}
    return Signals(
        ocr=ocr_confidence(best.word_confidences),
        locator=best.score,
        kinds=len(kinds),
        consensus=consensus(
            support(choice.winner), [support(group) for group in choice.rivals], best.score
        ),
        valid=best.error is None,
        kind=type_family(choice.type),
        position_only=kinds == {"position"},
        cross_check="payment" in kinds,
    )


def type_family(field_type: FieldType) -> str:
    """The family a field type's confidence is fitted by: "text", "date", "amount" or "other"."""
    return _FAMILIES.get(field_type, "other")


_FAMILIES = {
    FieldType.STRING: "text",
    FieldType.DATE: "date",
    FieldType.MONEY: "amount",
    FieldType.DECIMAL: "amount",
    FieldType.INTEGER: "amount",
}


def _largest_first(ranked: list[list[Candidate]]) -> list[list[Candidate]]:
    top = max(c.score for c in ranked[0])
    top_support = support(ranked[0])
    close = [
        g for g in ranked if g[0].error is None and max(c.score for c in g) >= CLOSE_TO_BEST * top
    ]
    # a weaker value found once does not outgrow one that two locators agree on
    strong = [
        g
        for g in close
        if max(c.score for c in g) >= top or support(g) >= CLOSE_TO_BEST * top_support
    ]
    if not strong:
        return ranked
    largest = max(Decimal(g[0].value or "0") for g in strong)
    rounded = [g for g in close if largest - Decimal(g[0].value or "0") <= ROUNDING]
    winner = max(rounded, key=lambda g: max(c.box.y0 + c.page for c in g))
    return [winner, *(g for g in ranked if g is not winner)]


def _with_payment(candidates: Sequence[Candidate], paid: Candidate) -> list[Candidate]:
    """The amount paid joins the candidates when it agrees with one (its value, or printed inside
    a find that did not parse), when no total was found, or when every total found is weak (a
    total printed without cents, "TOTAL 35" where "8.35" lost its first digits, counts half)."""
    valid = [c for c in candidates if c.error is None]
    if not valid or any(_agrees(c, paid) for c in candidates):
        return [*candidates, paid]
    strongest = max(c.score * (1.0 if _CENTS.search(c.raw) else NO_CENTS) for c in valid)
    if paid.score >= strongest * PAID_OVER:
        return [*candidates, paid]
    return list(candidates)


def _agrees(candidate: Candidate, paid: Candidate) -> bool:
    if candidate.error is None:
        return candidate.value == paid.value
    return paid.raw in candidate.raw


def _paid_first(ranked: list[list[Candidate]], paid: Candidate) -> list[list[Candidate]]:
    agreeing = [g for g in ranked if any(c is paid for c in g)]
    if not agreeing or agreeing[0] is ranked[0]:
        return ranked
    return [agreeing[0], *(g for g in ranked if g is not agreeing[0])]


def support(group: Sequence[Candidate]) -> float:
    by_kind: dict[str, float] = {}
    for candidate in group:
        by_kind[candidate.locator] = max(by_kind.get(candidate.locator, 0.0), candidate.score)
    return sum(by_kind.values())


def _rank(group: list[Candidate]) -> tuple[bool, float, float, float, float]:
    valid = any(c.error is None for c in group)
    first = min(group, key=lambda c: (c.page, c.box.y0, c.box.x0))
    return (
        valid,
        round(support(group), 6),
        max(c.score for c in group),
        -first.page,
        -first.box.y0,
    )


def _key(candidate: Candidate) -> str:
    if candidate.value is None:
        return "\x00invalid:" + candidate.raw
    return " ".join(candidate.value.casefold().split())


def _kind_index(kind: str) -> int:
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
