"""The amount paid, read from the payment lines of a receipt: tendered minus change.

Receipts print how the bill was settled under the total: `CASH 100.10` then `CHANGE 15.00`, or `VISA
63.35` alone. The amount paid is the last tendered amount before the first change line, less that
change (none printed counts as zero; a price line that starts with "Pay" is followed by the real
tender line). It cross-checks a grand total (see `combine`): among the totals found by label, the
one equal to the amount paid wins; when no total was found at all the amount paid stands in for it;
and when a change line confirms it, it also beats totals that were found only weakly. A payment line
is a row whose first or second word is a tender word (`Cash`, `Tendered`, `Paid`, `Received`,
`Accepted`, `Visa`, `Card`, ..., and those a locale profile adds: `Tunai` with `en-MY`) or a
change word, misread by at most one letter in words of four letters or more; its amount is the
last amount on the row. Amounts keep their two decimals even when OCR put a space around the
decimal mark (`200. 00`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.labels import bounded_levenshtein
from docflow.extraction.fields.layout import Row, compact
from docflow.extraction.fields.view import DocumentView

PAYMENT_SCORE, TENDERED_ONLY_SCORE = 0.6, 0.4
_AMOUNT = re.compile(r"(?<![\d.,])(\d{1,6})\s?[.,]\s?(\d{2})(?![\d])")
_THOUSANDS = re.compile(r"(\d),(\d{3})(?=[.]\d{2}(?!\d))")
_TENDER = (
    "cash",
    "tender",
    "tendered",
    "paid",
    "pay",
    "amountpaid",
    "received",
    "accepted",
    "visa",
    "mastercard",
    "master",
    "card",
    "creditcard",
    "debit",
    "amex",
    "payment",
    "especes",
    "efectivo",
)
_CHANGE = ("change", "changedue", "rendu", "cambio", "wechselgeld", "ruckgeld")
_LEAD_WORDS = 2


@dataclass(frozen=True, slots=True)
class Payment:
    """The amount paid and the rows it was read from."""

    amount: Decimal
    rows: tuple[Row, ...]
    with_change: bool


def amount_paid(view: DocumentView, tender_words: frozenset[str] = frozenset()) -> Payment | None:
    """Tendered minus change on the last page with a tender line, or None; `tender_words`
    (compact form) add to the tender words of a payment line."""
    tender = _TENDER + tuple(sorted(tender_words))
    for page in reversed(view.pages):
        tendered: tuple[Decimal, Row] | None = None
        change: tuple[Decimal, Row] | None = None
        for row in page.rows:
            kind = _kind(row, tender)
            amount = last_amount(row.text) if kind else None
            if amount is None:
                continue
            if kind == "tender" and change is None:
                tendered = (amount, row)
            elif kind == "change" and change is None and tendered is not None:
                change = (amount, row)
        if tendered is None:
            continue
        given, where = tendered
        if change is None:
            return Payment(given, (where,), with_change=False)
        if change[0] >= given:
            return None  # a misread or a price line: nothing paid is not an amount paid
        return Payment(given - change[0], (where, change[1]), with_change=True)
    return None


def payment_candidate(view: DocumentView, spec: FieldSpec) -> Candidate | None:
    """The amount paid as a candidate for a grand total, or None."""
    paid = amount_paid(view, spec.profile.tender_words)
    if paid is None:
        return None
    words = [w for row in paid.rows for w in row.words]
    raw = f"{paid.amount:.2f}"
    score = PAYMENT_SCORE if paid.with_change else TENDERED_ONLY_SCORE
    return spec.candidate(words, paid.rows[0].page, score, "payment", raw)


def last_amount(text: str) -> Decimal | None:
    """The last amount with two decimals in `text` ("CASH : 200. 00" -> 200.00), or None."""
    found = _AMOUNT.findall(_THOUSANDS.sub(r"\1\2", text))
    if not found:
        return None
    whole, cents = found[-1]
    return Decimal(f"{int(whole)}.{cents}")


def _kind(row: Row, tender: tuple[str, ...]) -> str | None:
    for word in row.words[:_LEAD_WORDS]:
        key = compact(word.text)
        if _matches(key, _CHANGE):
            return "change"
        if _matches(key, tender):
            return "tender"
    return None


def _matches(key: str, words: tuple[str, ...]) -> bool:
    for word in words:
        if key == word:
            return True
        if len(word) >= 4 and len(key) == len(word) and bounded_levenshtein(key, word, 1) <= 1:
            return True
    return False
