"""The issuer's name as printed, set right: what `position` finds is cleaned here.

Stray marks, a trailing registration number (also one whose closing bracket OCR lost), a document
title before or after the name and the street and town of a one-line sender address are dropped; a
legal form misread by one letter next to a correct one is set right ("SON BHD"), as is a pair of
forms always printed together that a locale profile names ("SDN BHD" with `en-MY`) misread in both
words or with a short misread word after an exact first one ("SDN BILD"); a yen sign next to
letters or dots is the letter Y OCR confused it with ("D.I.¥.").
"""

from __future__ import annotations

import itertools
import re

from docflow.extraction.fields.labels import bounded_levenshtein
from docflow.extraction.fields.layout import compact
from docflow.extraction.model import Word
from docflow.extraction.profiles import Profile

# Words that only a registered company's name carries, in compact form ("B.V." -> "bv"); a
# locale profile adds its own (`legal_forms`).
LEGAL_FORMS = frozenset(
    {
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
        "sa",
        "srl",
        "spa",
        "kk",
    }
)
_SPELLED_FORMS = ("LTD", "INC", "LLC", "GMBH", "PTE", "PTY", "CORP")
_MARKS = re.compile(r"[^\w&(]+")
_REGISTRATION = re.compile(r"[(\[{€]?\w{0,3}\d{5,}-?\s?[A-Z]?[)\]}]?", re.IGNORECASE)
_UNCLOSED = re.compile(r"\s*\([^()]*$")
# OCR reads a printed Y as a yen sign; next to letters or dots it is the letter ("D.I.¥.").
_YEN_AS_Y = re.compile(r"(?<=[A-Za-z.])¥|¥(?=[A-Za-z.])")
TITLE_WORDS = re.compile(
    r"^(tax |simplified |official )?(invoice|receipt|facture|rechnung|factuur)\b[.:]?\s*|"
    r"\s+(tax )?(invoice|receipt|facture|rechnung|factuur)[.:]?$",
    re.IGNORECASE,
)


def clean_name(words: tuple[Word, ...], profile: Profile) -> str:
    """The name without stray marks, a trailing registration number, a document title before or
    after it, or the street and town of a one-line sender address ("Acme AG - Main St 4 -
    Town"); a legal form misread by one letter next to a correct one is set right ("SON BHD"),
    with the legal forms of `profile` as well as the common ones."""
    tokens = [w.text for w in words]
    while tokens and (_MARKS.fullmatch(tokens[0]) or _MARKS.fullmatch(tokens[-1])):
        tokens = tokens[1:] if _MARKS.fullmatch(tokens[0]) else tokens[:-1]
    if len(tokens) > 1 and _REGISTRATION.fullmatch(tokens[-1]):
        tokens = tokens[:-1]
    text = re.sub(r"\s*\([^()]*\d[^()]*\)\s*$", "", " ".join(_legal_spelling(tokens, profile)))
    text = _UNCLOSED.sub("", text) or text  # "(Co. No:" left by a dropped registration number
    parts = re.split(r"\s+[-–|·•]\s+", text)
    if len(parts) > 1 and any(ch.isdigit() for ch in " ".join(parts[1:])):
        text = parts[0]
    return TITLE_WORDS.sub("", text).strip()


def _legal_spelling(tokens: list[str], profile: Profile) -> list[str]:
    for pair in profile.legal_pairs:
        tokens = _pair_spelling(tokens, pair)
    fixed = [_YEN_AS_Y.sub("Y", t) for t in tokens]
    tokens = list(fixed)
    forms = LEGAL_FORMS | profile.legal_forms
    spellings = (*profile.legal_spellings, *_SPELLED_FORMS)
    for i, token in enumerate(tokens):
        neighbours = [tokens[j] for j in (i - 1, i + 1) if 0 <= j < len(tokens)]
        if compact(token) in forms or not any(compact(n) in forms for n in neighbours):
            continue
        core = token.rstrip(".,")
        for form in spellings:
            if len(core) == len(form) and bounded_levenshtein(core.upper(), form, 1) == 1:
                spelled = form if core.isupper() else form.title()
                fixed[i] = spelled + token[len(core) :]
                break
    return fixed


def _pair_spelling(tokens: list[str], pair: tuple[str, str]) -> list[str]:
    """A pair of legal forms always printed together ("SDN BHD"): a short word misread after an
    exact first one ("SDN BILD") or both misread by a letter ("SON PHD", "Sdo Bra") is set right,
    in the case it was printed in."""
    first, second = pair
    fixed = list(tokens)
    for i in range(len(tokens) - 1):
        a, b = compact(tokens[i]), compact(tokens[i + 1])
        exact = a == first and b.startswith(second[0]) and 2 <= len(b) <= 4
        if not exact and not misread_pairs(tokens[i : i + 2], (pair,)):
            continue
        upper = tokens[i].isupper()
        fixed[i] = (first.upper() if upper else first.title()) + (
            tokens[i][len(tokens[i].rstrip(".,")) :]
        )
        fixed[i + 1] = (second.upper() if upper else second.title()) + (
            tokens[i + 1][len(tokens[i + 1].rstrip(".,")) :]
        )
    return fixed


def misread_pairs(tokens: list[str], pairs: tuple[tuple[str, str], ...]) -> int:
    """How many of `pairs` ("sdn", "bhd") OCR misread by a letter in each word ("SON PHD")."""
    keys = [compact(t) for t in tokens]
    return sum(
        1
        for first, second in pairs
        for a, b in itertools.pairwise(keys)
        if 2 <= len(a) <= 4
        and 2 <= len(b) <= 4
        and bounded_levenshtein(a, first, 1) <= 1
        and bounded_levenshtein(b, second, 1) <= 1
    )
