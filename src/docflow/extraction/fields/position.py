"""The issuer's name, found by its place on the page (its address is in `address`).

Receipts and most invoices print the issuer first. Page 1 is cut into phrases (a row printed in two
columns gives two), from the top down to 40% of the page or to the recipient's block ("Bill To",
"Customer", ...), whichever comes first. A phrase can be the name when it is mostly letters, holds a
word of four letters or a legal form, does not end in a comma (an address line), holds no "Label:"
word, is not an address line (a postcode, or a number next to a street word such as "Street",
"Lot", "Floor", or one a locale profile adds: "Jalan" with `en-MY`), is not a payment or copy
heading ("CASH"), is not mostly read uncertainly by OCR (a logo or stamp: median word confidence
under 0.5), is not a document title ("Invoice", "Tax Invoice", "Receipt", ...) and holds no date,
phone or tax/registration mention. Of the first six such phrases, the first that carries a legal
form ("Ltd", "Inc", "GmbH", "B.V.", ..., and a locale profile's: "Sdn Bhd", "S/B" with `en-MY`) is
the name, since receipts often print a brand or logo line above the registered name; without one,
the clearly taller phrase among the first three (a letterhead printed larger), else the first. A
trailing registration number is ignored when judging a phrase ("99 SPEED MART S/B (519537-X)"),
and a pair of forms misread in both words ("SDN BHD" with `en-MY`) still counts as a legal form. A
following row made only of legal-form words, optionally with a parenthesised qualifier
("(SEMENYIH) SDN BHD"), is joined to it, a legal form with a single word ("TRADING SDN BHD") is
joined to the phrase above it, and a trailing registration number, a document title or the rest of
a one-line sender address ("Acme AG - Main St 4 - Town") is dropped.

These finds score lower than a label or a region (they are guesses from layout): 0.85 when the
choice is clear (the first candidate phrase, and a registered name or a larger letterhead), 0.75
otherwise.
"""

from __future__ import annotations

import functools
import re
import statistics
from dataclasses import dataclass

from docflow.extraction.definition import FieldType
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.layout import Row, compact, join_words, segment
from docflow.extraction.fields.names import LEGAL_FORMS, TITLE_WORDS, clean_name, misread_pairs
from docflow.extraction.fields.values import parse_value
from docflow.extraction.fields.view import DocumentView
from docflow.extraction.model import Word
from docflow.extraction.profiles import Profile

COMPANY_SCORE, CLEAR_COMPANY_SCORE = 0.75, 0.85
_TOP = 0.4
_TITLES = re.compile(
    r"^(tax |simplified |official |cash |sales )?(invoice|receipt|bill|cash sale|quotation|"
    r"statement|credit note|delivery order|facture|rechnung|factuur|recu)s?\b",
    re.IGNORECASE,
)
# Legal forms as printed alone on the last row of a name; a locale profile adds its own.
_LEGAL_PRINTED = (
    r"ltd\.?|limited|inc\.?|llc|llp|plc|gmbh|ag|sa|sarl|bv|nv|co\.?|"
    r"corp\.?|pte\.?|pty\.?|&|enterprise|trading"
)
# The recipient's block: the issuer is printed before it.
_RECIPIENT = re.compile(
    r"\b(bill(ed)? to|invoice to|ship(ped)? to|sold to|deliver(ed)? to|customer|client)\b",
    re.IGNORECASE,
)
_CANDIDATE_PHRASES = 6
_JUNK_CONFIDENCE = 0.5
# Headings printed alone on a row of a receipt: how it was paid, which copy it is.
_HEADINGS = re.compile(
    r"^\W*(cash|credit|card|credit card|debit|payment|copy|original|duplicate|customer copy|"
    r"merchant copy|reprint)\W*$",
    re.IGNORECASE,
)
# A row holding a number next to a street word, or a postcode, is an address line. These are
# English and the common European languages; a locale profile adds its own (`street_words`).
_STREET = frozenset(
    {
        "lot",
        "no",
        "street",
        "st",
        "road",
        "rd",
        "avenue",
        "ave",
        "lane",
        "floor",
        "flr",
        "level",
        "unit",
        "suite",
        "block",
        "strasse",
        "str",
        "rue",
        "straat",
        "via",
        "calle",
    }
)
_POSTCODE = re.compile(r"^\d{5}[,.]?$")
_QUALIFIER = re.compile(r"\([A-Za-z][A-Za-z .&'-]*\)")
# A parenthesised remark holding a number, or a trailing registration number, is not the name.
_TRAILING_NUMBER = re.compile(r"\s*\([^()]*\d[^()]*\)?\s*$")

_STOP = re.compile(
    r"\b(tel|telephone|phone|fax|h/?p|mobile|e-?mail|www|http|gst|vat|sst|tax|reg|"
    r"registration|company no|co\.? no|invoice|receipt|cashier|dated?|table)\b|@|\.com\b",
    re.IGNORECASE,
)


def company_candidate(view: DocumentView, spec: FieldSpec) -> Candidate | None:
    """The issuer's name from the top of page 1, or None."""
    found = issuer(view, spec.profile)
    if found is None:
        return None
    words, _, clear = found
    score = CLEAR_COMPANY_SCORE if clear else COMPANY_SCORE
    name = clean_name(words, spec.profile)
    return spec.candidate(words, view.pages[0].page.number, score, "position", name)


@dataclass(frozen=True, slots=True)
class _Phrase:
    row: int  # index of its row on page 1
    words: tuple[Word, ...]
    legal: int  # how many legal forms it holds (a misread pair counts two)

    @property
    def text(self) -> str:
        return join_words(self.words)

    @property
    def plain(self) -> int:
        return sum(1 for w in self.words if any(ch.isalpha() for ch in w.text)) - self.legal


def issuer(view: DocumentView, profile: Profile) -> tuple[tuple[Word, ...], int, bool] | None:
    """The words of the issuer's name on page 1, the index of its last row, and whether the
    choice was clear: the first candidate phrase of the page, and a registered name or a
    letterhead printed larger. The street words and legal forms of `profile` add to the
    common ones."""
    if not view.pages:
        return None
    rows = view.pages[0].rows
    eligible = [
        p
        for p in _top_phrases(rows, profile)
        if _is_name_like(p.text, profile) and not _is_junk(p.words)
    ][:_CANDIDATE_PHRASES]
    if not eligible:
        return None
    chosen = _pick(eligible)
    words, last = list(chosen.words), chosen.row
    tail_forms = _legal_printed(profile.legal_printed)
    while last + 1 < len(rows) and _is_legal_tail(rows[last + 1].words, tail_forms):
        last += 1
        words.extend(rows[last].words)
    # "ASO ELECTRICAL" / "TRADING SDN BHD": a legal form with one word is a name's tail.
    above = [p for p in eligible if p.row == chosen.row - 1 and not p.legal]
    tail = chosen.plain <= 1 or chosen.words[0].text == "&"
    if chosen.legal and tail and above:
        words = [*above[0].words, *words]
    clear = chosen is eligible[0] and (chosen.legal > 0 or _taller(chosen, eligible[1:3]))
    return tuple(words), last, clear


def _is_junk(words: tuple[Word, ...]) -> bool:
    """A logo, stamp or torn edge read as letters: OCR is unsure of most of its words."""
    return statistics.median(w.confidence for w in words) < _JUNK_CONFIDENCE


def _is_legal_tail(words: tuple[Word, ...], forms: re.Pattern[str]) -> bool:
    """A row that ends a name: legal forms, optionally with a parenthesised qualifier such as a
    branch or region ("(SEMENYIH) SDN BHD")."""
    legal = [w for w in words if forms.match(w.text)]
    rest = [w for w in words if not forms.match(w.text)]
    return bool(legal) and all(_QUALIFIER.fullmatch(w.text) for w in rest)


@functools.lru_cache(maxsize=16)
def _legal_printed(extra: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"^({'|'.join((*extra, _LEGAL_PRINTED))})$", re.IGNORECASE)


def _top_phrases(rows: tuple[Row, ...], profile: Profile) -> list[_Phrase]:
    """Phrases of the rows above the recipient's block in the top part of the page; a row
    printed in two columns gives two phrases."""
    forms = LEGAL_FORMS | profile.legal_forms
    found: list[_Phrase] = []
    for index, row in enumerate(rows):
        if row.box.y0 > _TOP or _RECIPIENT.search(row.text):
            break
        for words in segment(row.words, gap_factor=4.0):
            exact = sum(1 for w in words if compact(w.text) in forms)
            misread = misread_pairs([w.text for w in words], profile.legal_pairs)
            found.append(_Phrase(index, words, exact or 2 * misread))
    return found


def _pick(eligible: list[_Phrase]) -> _Phrase:
    """A phrase naming a legal entity ("... Sdn Bhd", "... B.V.") beats a brand or logo line
    above it; otherwise a clearly taller letterhead among the first three, else the first."""
    legal = [p for p in eligible if p.legal]
    if legal:
        return legal[0]
    first = eligible[:3]
    tallest = max(first, key=_height)
    return tallest if _taller(tallest, [p for p in first if p is not tallest]) else first[0]


def _taller(phrase: _Phrase, others: list[_Phrase]) -> bool:
    return bool(others) and _height(phrase) > 1.3 * max(_height(p) for p in others)


def _height(phrase: _Phrase) -> float:
    return statistics.median(w.box.height for w in phrase.words)


def looks_like_name(text: str, profile: Profile) -> bool:
    """Whether `text` could be a company's name (used to vet any candidate for one)."""
    return _is_name_like(text, profile)


def _is_name_like(text: str, profile: Profile) -> bool:
    text = TITLE_WORDS.sub("", text.strip())  # "Acme Invoice" names Acme
    if text.startswith("("):
        return False
    text = _TRAILING_NUMBER.sub("", text) or text  # "99 SPEED MART S/B (519537-X)"
    if not text:
        return False
    chars = [ch for ch in text if not ch.isspace()]
    letters = sum(ch.isalpha() for ch in chars)
    if letters < 3 or letters < 0.6 * len(chars) or text.rstrip().endswith(","):
        return False  # a row ending in a comma is an address line
    words = text.split()
    forms = LEGAL_FORMS | profile.legal_forms
    if not any(sum(ch.isalpha() for ch in w) >= 4 or compact(w) in forms for w in words):
        return False  # specks read as letters ("3 '8 OI OIF") have no real word in them
    if any(w.endswith(":") and any(ch.isalpha() for ch in w) for w in text.split()):
        return False  # "Guest Name: ...", "Date: ..." label a value, they are not the name
    if _TITLES.match(text.strip()) or _HEADINGS.match(text) or _is_stop(text):
        return False
    if _is_address(words, profile.street_words):
        return False
    return not parse_value(FieldType.DATE, text).ok


def _is_address(words: list[str], street_words: frozenset[str]) -> bool:
    if any(_POSTCODE.match(w) for w in words):
        return True
    has_number = any(ch.isdigit() for w in words for ch in w)
    return has_number and any(compact(w) in _STREET or compact(w) in street_words for w in words)


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
