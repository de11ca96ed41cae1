"""Candidate values found by locators, and reading a typed value out of a run of words."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from docflow.extraction.definition import DateOrder, FieldDef, FieldType
from docflow.extraction.fields.layout import compact, is_wordlike, join_words, segment, union_box
from docflow.extraction.fields.money import currency_code
from docflow.extraction.fields.values import ParsedValue, parse_value
from docflow.extraction.model import Rect, Word
from docflow.extraction.profiles import Profile

_MAX_START = 8  # how many words past a label a typed value may start
_MAX_SPAN = 4  # longest value in words ("14 March 2026", "RM 1 234,56")
_IDENTIFIER = re.compile(r"(^|_)(number|no|num|id|ref|reference|code)($|_)")
_PUNCT_ONLY = re.compile(r"^[^\w$€£¥₹]+$")
OTHER_QUANTITY, OTHER_WORD, MORE_AMOUNTS, GARBLED = 0.5, 0.85, 0.7, 0.7
_SEPARATORS = set(":;-.,=#*|/()[]'\"")
_INCLUDING = ("incl",)
_EXCLUDING = ("excl", "subtot")
_EXCLUDING_WORDS = frozenset({"before", "without", "wo", "net", "nett", "sub", "ht"})
_OTHER_QUANTITIES = (
    "tax",
    "gst",
    "vat",
    "sst",
    "qty",
    "quantity",
    "item",
    "discount",
    "saving",
    "change",
    "cash",
    "paid",
    "tender",
    "rounding",
    "deposit",
    "point",
    "weight",
    "tip",
    "credit",
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One value a locator proposes for a field, with how much the locator trusts it."""

    value: str | None  # normalised, None when the text does not parse as the field's type
    raw: str
    score: float  # 0-1: the locator's own certainty (exact label, penalties, fallbacks)
    locator: str  # "region", "label", "pattern", "position", "currency"
    page: int
    box: Rect
    word_confidences: tuple[float, ...]
    error: str | None = None
    currency: str | None = None


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """What the locators need to know about the field they look for, and the workflow's
    profiles merged into one (`profiles.merge`)."""

    field: FieldDef
    date_order: DateOrder
    profile: Profile

    @property
    def typed(self) -> bool:
        return self.field.type != FieldType.STRING

    @property
    def identifier(self) -> bool:
        return self.field.type == FieldType.STRING and bool(_IDENTIFIER.search(self.field.name))

    def parse(self, raw: str) -> ParsedValue:
        return parse_value(
            self.field.type,
            raw,
            date_order=self.date_order,
            enum_values=self.field.enum_values,
            pattern=self.field.pattern,
        )

    def candidate(
        self, words: Sequence[Word], page: int, score: float, locator: str, raw: str | None = None
    ) -> Candidate:
        text = raw if raw is not None else join_words(words)
        parsed = self.parse(text)
        return Candidate(
            value=parsed.value,
            raw=text,
            score=score,
            locator=locator,
            page=page,
            box=union_box(words),
            word_confidences=tuple(w.confidence for w in words),
            error=parsed.error,
            currency=parsed.currency,
        )


def read_value(spec: FieldSpec, words: Sequence[Word]) -> tuple[tuple[Word, ...], float] | None:
    """The words holding the field's value at the start of `words`, and how much to trust that
    they belong to the label before them (1.0, lowered by `gap_penalty`).

    Typed fields take the earliest, then longest, run of words that parses as the type; an amount
    followed by further amounts on the row (a table row such as "Total 1 278.61 40.39") is less
    certain. Strings take the first run of words up to a wide gap or the next "Label:";
    identifiers (fields named `*_number`, `*_no`, `*_id`, `*_ref`, `*_code`) take the first
    token with a digit in it, and there is no identifier without one.
    """
    words = tuple(w for w in words if w.text.strip())
    if not words:
        return None
    if spec.typed:
        return _typed_run(spec, words)
    start = next((i for i, w in enumerate(words) if not _PUNCT_ONLY.match(w.text)), None)
    if start is None or _is_label(words[start]):
        return None  # "Invoice Date: ..." right of "Invoice" is another label's value
    run = _string_run(segment(words[start:])[0])
    if spec.identifier:
        digit = next((i for i, w in enumerate(run) if any(ch.isdigit() for ch in w.text)), None)
        if digit is None:
            return None
        return (run[digit],), gap_penalty(words[:start] + run[:digit])
    return run, gap_penalty(words[:start])


def _is_garbled(text: str) -> bool:
    """Symbols that are neither separators nor a currency: a misread value ("¥%.")."""
    if any(ch.isalnum() for ch in text) or currency_code(text.strip(":.()")) is not None:
        return False
    return any(not ch.isspace() and ch not in _SEPARATORS for ch in text)


def _is_label(word: Word) -> bool:
    return word.text.endswith(":") and is_wordlike(word.text)


def _typed_run(spec: FieldSpec, words: tuple[Word, ...]) -> tuple[tuple[Word, ...], float] | None:
    for start in range(min(_MAX_START, len(words))):
        if _PUNCT_ONLY.match(words[start].text):
            continue
        for length in range(min(_MAX_SPAN, len(words) - start), 0, -1):
            run = words[start : start + length]
            if spec.parse(join_words(run)).ok:
                penalty = gap_penalty(words[:start])
                if spec.field.type == FieldType.MONEY and _more_amounts(
                    spec, words[start + length :]
                ):
                    penalty *= MORE_AMOUNTS
                return run, penalty
    return None


def _more_amounts(spec: FieldSpec, rest: Sequence[Word]) -> bool:
    return any(
        any(ch.isdigit() for ch in w.text) and spec.parse(w.text.strip(",;:")).ok
        for w in rest[:_MAX_START]
    )


def _string_run(words: tuple[Word, ...]) -> tuple[Word, ...]:
    for i, word in enumerate(words[1:], 1):
        if _is_label(word):
            return words[:i]
    return words


def gap_penalty(words: Sequence[Word]) -> float:
    """How much the words between a label and its value weaken the pair.

    A word naming another quantity ("Total Tax: 3.12", "Total Qty 2") or excluding something ("Total
    (Excluding GST) 439.00", "Total before tax") multiplies by 0.5; any other word-like word by 0.85
    ("Total Sales: 12.00"); misread symbols ("TOTAL: ¥%. 80") by 0.7. Currency codes, percentages,
    punctuation and parenthesised qualifiers cost nothing, and after "incl"/"including"/"inclusive"
    the named tax is part of the qualifier.
    """
    factor, depth, included = 1.0, 0, False
    for word in words:
        text = word.text.strip()
        depth += text.count("(")
        key = compact(text)
        if key.startswith(_INCLUDING):
            included = True
        elif key.startswith(_EXCLUDING) or key in _EXCLUDING_WORDS:
            factor *= OTHER_QUANTITY
        elif depth == 0 and is_wordlike(text) and currency_code(text.strip(":.")) is None:
            other = key.startswith(_OTHER_QUANTITIES) and not included
            factor *= OTHER_QUANTITY if other else OTHER_WORD
        elif _is_garbled(text):
            factor *= GARBLED
        depth = max(0, depth - text.count(")"))
    return factor
