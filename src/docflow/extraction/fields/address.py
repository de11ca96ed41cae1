"""The issuer's postal address: the rows printed under its name.

The rows after the issuer's name (see `position`), up to the first word that starts a date, a
phone number, a phone/fax/e-mail/web or tax/registration mention (the row is cut there), or a
wide vertical gap; at most four rows, joined with spaces. Up to two rows right under the name are
passed over when they hold no digit (a branch or brand line), are a registration number, or
start with such a mention. A registration number leading a row ("(867388-U) 12, Jalan ...") and
stray punctuation are dropped; an address has at least three letters.
"""

from __future__ import annotations

import re

from docflow.extraction.definition import FieldType
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.layout import Row, compact, join_words
from docflow.extraction.fields.position import issuer
from docflow.extraction.fields.values import parse_value
from docflow.extraction.fields.view import DocumentView
from docflow.extraction.model import Word

ADDRESS_SCORE = 0.7
_REG_TOKEN = re.compile(r"[A-Z0-9]{5,}-?[A-Z]", re.IGNORECASE)
_REG_DIGITS = 4
_REG_WINDOW = 4
_BRACKETS = " ()[]{}:;|.,"
_PUNCT_ONLY = re.compile(r"[^\w&]+")
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


def address_candidate(view: DocumentView, spec: FieldSpec) -> Candidate | None:
    """The rows under the issuer's name, up to the first contact or tax mention, or None."""
    found = issuer(view, spec.profile)
    if found is None:
        return None
    rows = view.pages[0].rows
    last = found[1]
    lines: list[tuple[Word, ...]] = []
    previous, skipped = rows[last], 0
    for row in rows[last + 1 :]:
        gap = row.box.y0 - previous.box.y1
        if len(lines) >= _ADDRESS_ROWS or gap > 2.5 * max(row.height, previous.height):
            break
        previous = row
        words = _after_registration(row.words)
        if not any(ch.isalnum() for w in words for ch in w.text):
            continue  # specks, rules and registration numbers: not a row of the address
        cut = _before_stop(words)
        if not lines and skipped < _PREAMBLE_ROWS and _is_preamble(row, cut):
            skipped += 1
            continue
        kept = tuple(w for w in cut if not _PUNCT_ONLY.fullmatch(w.text))
        if kept:
            lines.append(kept)
        if len(cut) < len(words):
            break
    found_words = [w for line in lines for w in line]
    if sum(ch.isalpha() for w in found_words for ch in w.text) < 3:
        return None
    raw = " ".join(join_words(line) for line in lines)
    return spec.candidate(found_words, rows[0].page, ADDRESS_SCORE, "position", raw)


def _after_registration(words: tuple[Word, ...]) -> tuple[Word, ...]:
    """The row without a leading company registration number and its label ("(867388-U)",
    "Co-Reg: 860671-D", "BR No.: (124525-H)")."""
    for i in range(min(_REG_WINDOW, len(words)) - 1, -1, -1):
        token = words[i].text.strip(_BRACKETS)
        if _REG_TOKEN.fullmatch(token) and sum(ch.isdigit() for ch in token) >= _REG_DIGITS:
            return words[i + 1 :]
    return words


def _is_preamble(row: Row, kept: tuple[Word, ...]) -> bool:
    """Rows between the name and the address: a branch or brand name (no digit at all), or a
    row that starts with a date, phone or tax mention."""
    has_text = any(ch.isalnum() for w in kept for ch in w.text)
    return not has_text or not any(ch.isdigit() for ch in row.text)


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
