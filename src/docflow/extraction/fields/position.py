"""Free text found by its place on the page: the issuer's name and address at the top.

Receipts and most invoices print the issuer first: its name is the first line of real words at the
top of page 1, and its address the lines right under it. Concretely:

- company: among the top 40% of page 1, rows that are mostly letters, do not end in a comma (an
  address line), are not a document title ("Invoice", "Tax Invoice", "Receipt", ...) and hold no
  date, phone or tax/registration mention. Of the first six such rows, the first that carries a
  legal form ("Sdn Bhd", "Ltd", "Inc", "GmbH", "S/B", ...) is the name, since receipts often print
  a brand or logo line above the registered name; without one, the clearly taller row among the
  first three (a letterhead printed larger), else the first. The row's first phrase is taken; a
  following row made only of legal-form words is joined to it, a legal form alone with one word
  ("TRADING SDN BHD") is joined to the row above, and a trailing parenthesised registration
  number is dropped.
- address: the rows after the name, up to the first word that starts a date, a phone number, a
  phone/fax/e-mail/web or tax/registration mention (the row is cut there), or a wide vertical
  gap; at most four rows, joined with spaces. Up to two rows right under the name are passed
  over when they hold no digit (a branch or brand line), are a registration number, or start with
  such a mention.

These finds score lower than a label or a region (they are guesses from layout), so a document
that relies on them alone lands in review unless the workflow's thresholds say otherwise.
"""

from __future__ import annotations

import re

from docflow.extraction.definition import FieldType
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.layout import Row, compact, join_words, segment
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
# Words that only a registered company's name carries, in compact form ("B.V." -> "bv").
_LEGAL_FORMS = frozenset(
    {
        "sdn",
        "bhd",
        "berhad",
        "ltd",
        "limited",
        "inc",
        "llc",
        "llp",
        "plc",
        "gmbh",
        "ag",
        "sarl",
        "bv",
        "nv",
        "corp",
        "pte",
        "pty",
        "sb",
        "sa",
        "srl",
        "spa",
        "kk",
    }
)
# The recipient's block: the issuer is printed before it.
_RECIPIENT = re.compile(
    r"\b(bill(ed)? to|invoice to|ship(ped)? to|sold to|deliver(ed)? to|customer|client)\b",
    re.IGNORECASE,
)
_CANDIDATE_ROWS = 6
_ADDRESS_ROWS = 4
_PREAMBLE_ROWS = 2
_STOP_WORDS = frozenset(
    {
        "tel",
        "telno",
        "telephone",
        "phone",
        "fax",
        "faxno",
        "hp",
        "mobile",
        "email",
        "gst",
        "gstno",
        "gstid",
        "gstreg",
        "gstregno",
        "vat",
        "vatno",
        "sst",
        "reg",
        "regno",
        "registration",
        "invoice",
        "receipt",
        "cashier",
        "date",
        "dated",
        "table",
        "tax",
        "tin",
        "companyno",
        "cono",
    }
)
_PHONE = re.compile(r"\(?0\d{1,3}\)?-\d{3,8}")
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
    """The rows under the issuer's name, up to the first contact or tax mention, or None."""
    found = _company_rows(view)
    if found is None:
        return None
    rows, following = found
    lines: list[tuple[Word, ...]] = []
    previous, skipped = rows[-1], 0
    for row in following:
        gap = row.box.y0 - previous.box.y1
        if len(lines) >= _ADDRESS_ROWS or gap > 2.5 * max(row.height, previous.height):
            break
        previous = row
        kept = _before_stop(row.words)
        if not lines and skipped < _PREAMBLE_ROWS and _is_preamble(row, kept):
            skipped += 1
            continue
        if kept:
            lines.append(kept)
        if len(kept) < len(row.words):
            break
    if not lines:
        return None
    words = [w for line in lines for w in line]
    raw = " ".join(join_words(line) for line in lines)
    return spec.candidate(words, rows[0].page, ADDRESS_SCORE, "position", raw)


def _is_preamble(row: Row, kept: tuple[Word, ...]) -> bool:
    """Rows between the name and the address: a registration number, a branch or brand name
    (no digit at all), a date or tax line."""
    text = row.text.strip()
    return not kept or bool(_REG_NUMBER.match(text)) or not any(ch.isdigit() for ch in text)


def _before_stop(words: tuple[Word, ...]) -> tuple[Word, ...]:
    """The words of an address row before a phone, fax, e-mail, tax, registration or date."""
    for i, word in enumerate(words):
        text = word.text.strip(" ,.;|")
        key = compact(text)
        if (
            key in _STOP_WORDS
            or ("@" in text or "www" in key or "http" in key)
            or (key in ("t", "f") and word.text.endswith(":"))
            or _PHONE.fullmatch(text)
            or any(_is_date(words[i : i + n]) for n in (1, 3))
        ):
            return words[:i]
    return words


def _is_date(words: tuple[Word, ...]) -> bool:
    text = join_words(words)
    return any(ch.isdigit() for ch in text) and parse_value(FieldType.DATE, text).ok


def _company_rows(view: DocumentView) -> tuple[list[Row], list[Row]] | None:
    """The rows of the name, and the rows after them."""
    if not view.pages:
        return None
    all_rows = list(view.pages[0].rows)
    top = []
    for i, row in enumerate(all_rows):
        if row.box.y0 > _TOP or _RECIPIENT.search(row.text):
            break
        top.append(i)
    eligible = [i for i in top if _is_name_like(all_rows[i])][:_CANDIDATE_ROWS]
    if not eligible:
        return None
    start = end = _pick(all_rows, eligible)
    end += 1
    while end < len(all_rows) and all(_LEGAL.match(w.text) for w in all_rows[end].words):
        end += 1
    # "ASO ELECTRICAL" / "TRADING SDN BHD": a legal form with one word is a name's tail.
    if (
        _legal_words(all_rows[start])
        and _plain_words(all_rows[start]) <= 1
        and start - 1 in eligible
        and not _legal_words(all_rows[start - 1])
    ):
        start -= 1
    return all_rows[start:end], all_rows[end:]


def _pick(rows: list[Row], eligible: list[int]) -> int:
    """A row naming a legal entity ("... Sdn Bhd", "... Ltd") beats a brand or logo line above
    it; otherwise a clearly taller letterhead among the first three, else the first."""
    legal = [i for i in eligible if _legal_words(rows[i])]
    if legal:
        return legal[0]
    first = eligible[:3]
    tallest = max(first, key=lambda i: rows[i].height)
    others = [rows[i].height for i in first if i != tallest]
    if others and rows[tallest].height > 1.3 * max(others):
        return tallest
    return first[0]


def _legal_words(row: Row) -> int:
    return sum(1 for w in _phrase_words(row) if compact(w.text) in _LEGAL_FORMS)


def _plain_words(row: Row) -> int:
    return sum(1 for w in _phrase_words(row) if compact(w.text) not in _LEGAL_FORMS)


def _is_name_like(row: Row) -> bool:
    text = _phrase(row)
    chars = [ch for ch in text if not ch.isspace()]
    letters = sum(ch.isalpha() for ch in chars)
    if letters < 3 or letters < 0.6 * len(chars) or text.rstrip().endswith(","):
        return False  # a row ending in a comma is an address line
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
