"""Free text found by its place on the page: the issuer's name and address at the top.

Receipts and most invoices print the issuer first: its name is the first line of real words at the
top of page 1, and its address the lines right under it. Concretely:

- company: among the top 40% of page 1, rows that are mostly letters, are not a document title
  ("Invoice", "Tax Invoice", "Receipt", ...) and hold no date, phone or registration number; the
  first such row's first phrase is the name, or the clearly taller row among the first three (a
  letterhead printed larger). A following row made only of legal-form words ("Sdn Bhd", "Ltd",
  "GmbH", ...) is joined to it, and a trailing parenthesised registration number is dropped.
- address: the rows after the name, skipping registration-number rows right under it, up to the
  first row that holds a date, a phone/fax/e-mail/web, a tax or registration mention or a document
  title, or after a wide vertical gap; at most four rows, joined with spaces.

These finds score lower than a label or a region (they are guesses from layout), so a document
that relies on them alone lands in review unless the workflow's thresholds say otherwise.
"""

from __future__ import annotations

import re

from docflow.extraction.definition import FieldType
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.layout import Row, join_words, segment
from docflow.extraction.fields.values import parse_value
from docflow.extraction.fields.view import DocumentView
from docflow.extraction.model import Word

COMPANY_SCORE = 0.75
ADDRESS_SCORE = 0.7
_TOP = 0.4
_TITLES = re.compile(
    r"^(tax |simplified |official |cash |sales )?(invoice|receipt|bill|cash sale|quotation|"
    r"statement|credit note|delivery order|facture|rechnung|factuur|recu)s?\b",
    re.IGNORECASE,
)
_LEGAL = re.compile(
    r"^(sdn\.?|bhd\.?|berhad|ltd\.?|limited|inc\.?|llc|llp|plc|gmbh|ag|sa|sarl|bv|nv|co\.?|"
    r"corp\.?|pte\.?|pty\.?|s/b|&|enterprise|trading)$",
    re.IGNORECASE,
)
_STOP = re.compile(
    r"\b(tel|telephone|phone|fax|h/?p|mobile|e-?mail|www|http|gst|vat|sst|tax|reg|"
    r"registration|company no|co\.? no|invoice|receipt|cashier|dated?|table)\b|@|\.com\b",
    re.IGNORECASE,
)
_REG_NUMBER = re.compile(r"^\(?[\w\- ./]*\d[\w\- ./]*\)?$")


def company_candidate(view: DocumentView, spec: FieldSpec) -> Candidate | None:
    """The issuer's name from the top of page 1, or None."""
    found = _company_rows(view)
    if found is None:
        return None
    rows, _ = found
    words = [w for row in rows for w in _phrase_words(row)]
    raw = re.sub(r"\s*\([^()]*\d[^()]*\)\s*$", "", join_words(words))
    return spec.candidate(words, rows[0].page, COMPANY_SCORE, "position", raw)


def address_candidate(view: DocumentView, spec: FieldSpec) -> Candidate | None:
    """The rows under the issuer's name, up to the first contact or tax line, or None."""
    found = _company_rows(view)
    if found is None:
        return None
    rows, following = found
    picked: list[Row] = []
    previous = rows[-1]
    for row in following:
        gap = row.box.y0 - previous.box.y1
        if len(picked) >= 4 or gap > 2.5 * max(row.height, previous.height):
            break
        if _is_stop(row.text):
            break
        previous = row
        if not picked and _REG_NUMBER.match(row.text.strip()):
            continue
        picked.append(row)
    if not picked:
        return None
    words = [w for row in picked for w in row.words]
    raw = " ".join(row.text for row in picked)
    return spec.candidate(words, picked[0].page, ADDRESS_SCORE, "position", raw)


def _company_rows(view: DocumentView) -> tuple[list[Row], list[Row]] | None:
    """The rows of the name, and the rows after them."""
    if not view.pages:
        return None
    rows = [r for r in view.pages[0].rows if r.box.y0 <= _TOP]
    eligible = [i for i, row in enumerate(rows) if _is_name_like(row)][:3]
    if not eligible:
        return None
    chosen = eligible[0]
    tallest = max(eligible, key=lambda i: rows[i].height)
    others = [rows[i].height for i in eligible if i != tallest]
    if others and rows[tallest].height > 1.3 * max(others):
        chosen = tallest
    end = chosen + 1
    all_rows = list(view.pages[0].rows)
    while end < len(all_rows) and all(_LEGAL.match(w.text) for w in all_rows[end].words):
        end += 1
    return all_rows[chosen:end], all_rows[end:]


def _is_name_like(row: Row) -> bool:
    text = _phrase(row)
    chars = [ch for ch in text if not ch.isspace()]
    letters = sum(ch.isalpha() for ch in chars)
    if letters < 3 or letters < 0.6 * len(chars):
        return False
    if _TITLES.match(text.strip()) or _is_stop(text):
        return False
    return not parse_value(FieldType.DATE, text).ok


def _is_stop(text: str) -> bool:
    if _STOP.search(text):
        return True
    tokens = text.split()
    return any(
        parse_value(FieldType.DATE, " ".join(tokens[i : i + n])).ok
        for i in range(len(tokens))
        for n in (1, 3)
        if any(ch.isdigit() for ch in tokens[i])
    )


def _phrase(row: Row) -> str:
    return join_words(_phrase_words(row))


def _phrase_words(row: Row) -> tuple[Word, ...]:
    return segment(row.words, gap_factor=4.0)[0]
